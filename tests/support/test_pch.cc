// Compiles tests/support/test_pch.h once (netqos_test_pch); it has no code of its own.
