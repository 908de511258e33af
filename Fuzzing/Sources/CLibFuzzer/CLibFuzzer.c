// Only the header matters (LLVMFuzzerRunDriver's declaration); a C target needs one source.
#include "CLibFuzzer.h"
