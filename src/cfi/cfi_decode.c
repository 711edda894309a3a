/* in progress */ typedef int bk_placeholder_cfi_decode;
