/* partial_runner.c — test-only: a library that reports the right ABI version
 * but lacks the rest of etchat_runner.h, as an unrelated or truncated build
 * would. */
#include "../../native/etchat_runner.h"

int32_t etchat_abi_version(void) { return ETCHAT_RUNNER_ABI_VERSION; }
