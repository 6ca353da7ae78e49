/* A minimal command-protocol agent for benchmarks: reads the request to EOF, optionally sleeps
   argv[1] milliseconds, answers {"content": "ok"}. Compiled C so its own start-up (about a
   millisecond) does not hide RuleDrift's overhead. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv) {
    char buffer[65536];
    while (fread(buffer, 1, sizeof buffer, stdin) > 0) {
    }
    long ms = argc > 1 ? strtol(argv[1], NULL, 10) : 0;
    if (ms > 0) {
        struct timespec delay = {ms / 1000, (ms % 1000) * 1000000L};
        nanosleep(&delay, NULL);
    }
    fputs("{\"content\": \"I cannot share that. ok\"}", stdout);
    return 0;
}
