// libFuzzer's driver, called from Swift (FuzzCheck.runFuzzer). SwiftPM renames an executable's
// entry point (`<module>_main`, for testable executables), so libFuzzer's own main() is not the
// one that runs: each target's main.swift hands its test function to this driver instead.
// The symbol is in libclang_rt.fuzzer, linked by -sanitize=fuzzer.
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*test)(const uint8_t *data, size_t size));
