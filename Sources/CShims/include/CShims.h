#ifndef PREFETCH_CSHIMS_H
#define PREFETCH_CSHIMS_H

#include <curl/curl.h>

#include "CShimsSDBus.h"  /* sd-bus, loaded at run time */

/*
 * Swift cannot call C variadic functions, and curl_easy_setopt /
 * curl_multi_setopt are variadic. One typed wrapper per argument type, as
 * swift-nio's CNIOLinux and FoundationNetworking's CFURLSessionInterface do.
 */

CURLcode CShims_easy_setopt_long(CURL *handle, CURLoption option, long value);
CURLcode CShims_easy_setopt_off(CURL *handle, CURLoption option, curl_off_t value);
CURLcode CShims_easy_setopt_string(CURL *handle, CURLoption option, const char *value);
CURLcode CShims_easy_setopt_pointer(CURL *handle, CURLoption option, void *value);
CURLcode CShims_easy_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value);
CURLcode CShims_easy_setopt_write_callback(CURL *handle, CURLoption option,
    size_t (*callback)(char *, size_t, size_t, void *));
CURLcode CShims_easy_setopt_xferinfo_callback(CURL *handle,
    int (*callback)(void *, curl_off_t, curl_off_t, curl_off_t, curl_off_t));

CURLcode CShims_easy_getinfo_long(CURL *handle, CURLINFO info, long *value);
CURLcode CShims_easy_getinfo_off(CURL *handle, CURLINFO info, curl_off_t *value);
CURLcode CShims_easy_getinfo_string(CURL *handle, CURLINFO info, char **value);
CURLcode CShims_easy_getinfo_pointer(CURL *handle, CURLINFO info, void **value);

CURLMcode CShims_multi_setopt_long(CURLM *handle, CURLMoption option, long value);

/* The filesystem type (statfs f_type) of an open file, or -1: <sys/vfs.h> is not in
 * Swift's Glibc module. */
long CShims_filesystem_type(int fd);

/* Starts writeback of a byte range without waiting for it (Linux sync_file_range with
 * SYNC_FILE_RANGE_WRITE), so a later fsync has little left to do. 0 or -1 (errno). */
int CShims_start_writeback(int fd, long long offset, long long length);

/* glibc's mallopt(M_MMAP_THRESHOLD) and mallopt(M_TRIM_THRESHOLD): <malloc.h> is not in
 * Swift's Glibc module. 1 on success. */
int CShims_malloc_thresholds(int mmap_threshold, int trim_threshold);
/// malloc_trim(0): every free page of the heap back to the system (the daemon come to rest).
int CShims_malloc_trim(void);

/* renameat2(RENAME_EXCHANGE): swaps two names atomically (Linux 3.15+). 0 or -1 (errno).
 * <stdio.h> declares renameat2 only with _GNU_SOURCE, which Swift's Glibc module lacks. */
int CShims_exchange(int from_folder, const char *from, int to_folder, const char *to);

/* copy_file_range(2) from the current offsets of both files (Linux 4.5+; glibc declares it
 * only with _GNU_SOURCE): the bytes copied (0 at the source's end), or -1 (errno). */
long long CShims_copy_file_range(int from, int to, long long length);

#endif
