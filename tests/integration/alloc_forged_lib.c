/* A library that passes for libflightrec's allocation registry and
 * nothing else, for alloc_hostile.sh: alloc_forged copies it to a file
 * named libflightrec.so, loads it and fills the registry with lies. */
#include "flightrec/alloc_abi.h"

__attribute__((visibility("default"))) struct fr_alloc_registry_abi fr_alloc_registry;
