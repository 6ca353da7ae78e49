"""Reading a suite file into a frozen `Suite`, and the system message it gives a target."""
