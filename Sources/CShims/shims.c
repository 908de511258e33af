#define _GNU_SOURCE
#include <malloc.h>
#include "CShims.h"

#include <fcntl.h>
#include <unistd.h>
#include <stdio.h>

#include <sys/vfs.h>

CURLcode CShims_easy_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

CURLcode CShims_easy_setopt_off(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}

CURLcode CShims_easy_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

CURLcode CShims_easy_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

CURLcode CShims_easy_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}

CURLcode CShims_easy_setopt_write_callback(CURL *handle, CURLoption option,
    size_t (*callback)(char *, size_t, size_t, void *)) {
    return curl_easy_setopt(handle, option, callback);
}

CURLcode CShims_easy_setopt_xferinfo_callback(CURL *handle,
    int (*callback)(void *, curl_off_t, curl_off_t, curl_off_t, curl_off_t)) {
    return curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, callback);
}

CURLcode CShims_easy_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

CURLcode CShims_easy_getinfo_off(CURL *handle, CURLINFO info, curl_off_t *value) {
    return curl_easy_getinfo(handle, info, value);
}

CURLcode CShims_easy_getinfo_string(CURL *handle, CURLINFO info, char **value) {
    return curl_easy_getinfo(handle, info, value);
}

CURLcode CShims_easy_getinfo_pointer(CURL *handle, CURLINFO info, void **value) {
    return curl_easy_getinfo(handle, info, value);
}

CURLMcode CShims_multi_setopt_long(CURLM *handle, CURLMoption option, long value) {
    return curl_multi_setopt(handle, option, value);
}

long CShims_filesystem_type(int fd) {
    struct statfs info;
    return fstatfs(fd, &info) == 0 ? (long)info.f_type : -1;
}

int CShims_start_writeback(int fd, long long offset, long long length) {
    return sync_file_range(fd, (off_t)offset, (off_t)length, SYNC_FILE_RANGE_WRITE);
}

int CShims_malloc_thresholds(int mmap_threshold, int trim_threshold) {
    return mallopt(M_MMAP_THRESHOLD, mmap_threshold) && mallopt(M_TRIM_THRESHOLD, trim_threshold);
}

int CShims_malloc_trim(void) {
    return malloc_trim(0);
}

int CShims_exchange(int from_folder, const char *from, int to_folder, const char *to) {
    return renameat2(from_folder, from, to_folder, to, RENAME_EXCHANGE);
}

long long CShims_copy_file_range(int from, int to, long long length) {
    return copy_file_range(from, NULL, to, NULL, (size_t)length, 0);
}
