/* Included first into every fixture compiled for localdiff (meson.build):
 * the fixture's main is renamed localdiff_fixture_main by -Dmain=...; in
 * C++ this gives it C linkage, so the C harness can call it. */
#ifdef __cplusplus
extern "C" int localdiff_fixture_main();
#endif
