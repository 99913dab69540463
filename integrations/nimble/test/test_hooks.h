/*
 * test_hooks.h — what the adapter's test build (run.sh) hooks into: the
 * adapter calls fake_wrong_task (test_adapter.c) where a firmware's debug
 * build asserts (ANCS_NIMBLE_CHECK_TASK).
 */
void fake_wrong_task(void *adapter);
#define ANCS_NIMBLE_CHECK_TASK 1
#define ANCS_NIMBLE_WRONG_TASK(adapter) fake_wrong_task(adapter)
