/* NimBLE's security manager (ble_sm_alg.c) calls mbedtls_ecp_export(), which
 * Mbed TLS has only since 3.0; Debian 12 ships 2.28. This header is
 * force-included into the NimBLE build (Makefile) and declares it for 2.x;
 * mbedtls2_compat.c defines it. */
#ifndef ANCS_MBEDTLS2_COMPAT_H
#define ANCS_MBEDTLS2_COMPAT_H
#include <mbedtls/version.h>
#if MBEDTLS_VERSION_MAJOR < 3
#include <mbedtls/ecp.h>
int mbedtls_ecp_export(const mbedtls_ecp_keypair *key, mbedtls_ecp_group *grp, mbedtls_mpi *d, mbedtls_ecp_point *Q);
#endif
#endif
