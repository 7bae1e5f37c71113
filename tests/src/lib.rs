//! End-to-end tests of mcp-cursos live in `e2e/`; this library is empty on purpose.
