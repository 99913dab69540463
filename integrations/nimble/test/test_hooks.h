/*
 * test_hooks.h — what the adapter's test build (run.sh) hooks into: the
 * adapter calls fake_wrong_task (test_adapter.c) where a firmware's debug
 * build asserts (ANCS_NIMBLE_CHECK_TASK), and the fake's ble_npl_callout_deinit.
 */
void fake_wrong_task(void *adapter);
/* The timer released at deinit, as ports with ble_npl_callout_deinit do
 * (the pinned NimBLE's NPL does not declare it); run.sh builds the tests a
 * second time without it (ANCS_TEST_CALLOUT_KEPT): the callout kept. */
#ifndef ANCS_TEST_CALLOUT_KEPT
struct ble_npl_callout;
void ble_npl_callout_deinit(struct ble_npl_callout *co);
#define ANCS_NIMBLE_CALLOUT_DEINIT 1
#endif
#define ANCS_NIMBLE_CHECK_TASK 1
#define ANCS_NIMBLE_WRONG_TASK(adapter) fake_wrong_task(adapter)
