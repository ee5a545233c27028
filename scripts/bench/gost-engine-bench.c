/*
 * The OpenSSL gost engine's own time for the GOST check, in-process (no process start): the bench's
 * yardstick for the service's WebAssembly (scripts/bench/lib/gost-check.ts). Built by `make
 * gost-engine-bench` against Debian's libcrypto; loads the engine through OPENSSL_CONF.
 *
 *   gost-engine-bench cms SIGNATURE CONTENT RUNS
 *     per run: parse the detached DER CMS signature, CMS_verify it over CONTENT (the messageDigest
 *     over the content, the signature over the signed attributes with the certificate's key; the
 *     certificate chain is not checked, as the service without a trust store)
 *   gost-engine-bench digest256|digest512 CONTENT RUNS
 *     per run: Streebog of CONTENT
 *
 * Prints each run's time in microseconds, one a line. Files are read once, before the runs.
 */
#include <openssl/bio.h>
#include <openssl/cms.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static unsigned char *read_file(const char *path, long *size) {
  FILE *file = fopen(path, "rb");
  if (!file || fseek(file, 0, SEEK_END) != 0 || (*size = ftell(file)) < 0 || fseek(file, 0, SEEK_SET) != 0) {
    perror(path);
    exit(2);
  }
  unsigned char *bytes = malloc(*size > 0 ? *size : 1);
  if (!bytes || fread(bytes, 1, *size, file) != (size_t)*size) {
    perror(path);
    exit(2);
  }
  fclose(file);
  return bytes;
}

static double microseconds(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return now.tv_sec * 1e6 + now.tv_nsec / 1e3;
}

static int fail(const char *what) {
  fprintf(stderr, "gost-engine-bench: %s\n", what);
  ERR_print_errors_fp(stderr);
  return 1;
}

int main(int argc, char **argv) {
  int cms = argc == 5 && strcmp(argv[1], "cms") == 0;
  int digest = argc == 4 && (strcmp(argv[1], "digest256") == 0 || strcmp(argv[1], "digest512") == 0);
  if (!cms && !digest) {
    fprintf(stderr, "usage: gost-engine-bench cms SIGNATURE CONTENT RUNS | digest256|digest512 CONTENT RUNS\n");
    return 2;
  }
  OPENSSL_init_crypto(OPENSSL_INIT_LOAD_CONFIG, NULL);
  const EVP_MD *md = EVP_get_digestbyname(strcmp(argv[1], "digest512") == 0 ? "md_gost12_512" : "md_gost12_256");
  if (!md) return fail("no Streebog: is the gost engine in OPENSSL_CONF?");
  long signatureSize = 0, contentSize = 0;
  unsigned char *signature = cms ? read_file(argv[2], &signatureSize) : NULL;
  unsigned char *content = read_file(argv[cms ? 3 : 2], &contentSize);
  int runs = atoi(argv[cms ? 4 : 3]);
  for (int run = 0; run < runs; run++) {
    double started = microseconds();
    if (cms) {
      BIO *in = BIO_new_mem_buf(signature, (int)signatureSize);
      BIO *data = BIO_new_mem_buf(content, (int)contentSize);
      CMS_ContentInfo *parsed = d2i_CMS_bio(in, NULL);
      if (!parsed) return fail("the signature is not DER CMS");
      if (CMS_verify(parsed, NULL, NULL, data, NULL, CMS_BINARY | CMS_NO_SIGNER_CERT_VERIFY) != 1) return fail("CMS_verify refused the signature");
      CMS_ContentInfo_free(parsed);
      BIO_free(in);
      BIO_free(data);
    } else {
      unsigned char out[EVP_MAX_MD_SIZE];
      unsigned int outSize = 0;
      if (!EVP_Digest(content, contentSize, out, &outSize, md, NULL)) return fail("EVP_Digest failed");
    }
    printf("%.1f\n", microseconds() - started);
  }
  return 0;
}
