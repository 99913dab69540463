/* mbedtls_ecp_export() for Mbed TLS 2.x: copies a key pair's group, private
 * value and public point out (see mbedtls2_compat.h). */
#include "mbedtls2_compat.h"
#if MBEDTLS_VERSION_MAJOR < 3
int
mbedtls_ecp_export(const mbedtls_ecp_keypair *key, mbedtls_ecp_group *grp, mbedtls_mpi *d, mbedtls_ecp_point *Q)
{
    int rc = mbedtls_ecp_group_copy(grp, &key->grp);
    if (rc == 0) rc = mbedtls_mpi_copy(d, &key->d);
    if (rc == 0) rc = mbedtls_ecp_copy(Q, &key->Q);
    return rc;
}
#endif
