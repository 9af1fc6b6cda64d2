// The single Catch2 main of the test binary; test files include <catch2/catch.hpp> only.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
