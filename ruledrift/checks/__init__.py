"""The checks of an answer: the `CHECKS` registry, JavaScript regular expressions in
time-bounded workers, language identification."""
