/*
 * Host ABI 2 as tigris-ml 0.12.1's tigris/runtime.py binds it through ctypes. All fifteen
 * symbols must be exported for the library to be accepted as TIGRIS_HOST_LIBRARY.
 */
#ifndef TIGRIS_HOST_H
#define TIGRIS_HOST_H

#include <stdint.h>

uint32_t tigris_host_abi(void);
const char *tigris_host_version(void);
const char *tigris_host_create(const void *plan, uint32_t plan_size, uint32_t slow_capacity, void **handle);
void tigris_host_destroy(void *handle);
uint32_t tigris_host_tensor_count(void *handle, int is_output);
const char *tigris_host_tensor_name(void *handle, int is_output, uint32_t index);
uint32_t tigris_host_tensor_bytes(void *handle, int is_output, uint32_t index);
uint32_t tigris_host_tensor_dtype(void *handle, int is_output, uint32_t index);
uint32_t tigris_host_tensor_rank(void *handle, int is_output, uint32_t index);
int32_t tigris_host_tensor_dim(void *handle, int is_output, uint32_t index, uint32_t axis);
const char *tigris_host_run(void *handle, void **inputs, uint32_t *input_sizes, uint32_t n_inputs, void **outputs,
                            uint32_t *output_sizes, uint32_t n_outputs);
uint64_t tigris_host_metric(void *handle, uint32_t index);
const char *tigris_host_reset_state(void *handle);
void tigris_host_trace_buffer(void *handle, void *events, uint32_t capacity);
uint32_t tigris_host_trace_count(void *handle);

#endif
