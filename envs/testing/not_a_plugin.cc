// A shared library that is not an rlswarm env plugin: it exports no
// rlswarm_env_plugin_v1 (plugin_env_test.cc expects the loader to say so).

extern "C" int rlswarm_not_a_plugin() { return 1; }
