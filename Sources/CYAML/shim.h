#ifndef ATTEST_GATEWAY_CYAML_SHIM_H
#define ATTEST_GATEWAY_CYAML_SHIM_H
#include <yaml.h>
#endif
