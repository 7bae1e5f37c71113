//! The protocol errors of the access checks, made before anything runs: a caller's scope that
//! does not allow the tool (ADR 0017), a tool or prompt the operator's policy switched off
//! (ADR 0036).

use rmcp::ErrorData as McpError;
use serde_json::json;

use crate::access::caller::Caller;

/// A caller whose scope does not allow writing called a tool that writes: refused before the
/// tool runs, as a protocol error (the tool is not offered to this caller at all).
pub(crate) fn scope_refused(tool: &str, caller: &Caller) -> McpError {
    tracing::warn!(tool, caller = caller.name(), scope = %caller.scope(), "writing tool refused by scope");
    McpError::invalid_params(
        format!(
            "A ferramenta {tool} altera o catálogo e não está disponível para esta chave (escopo {}). \
             Use uma chave com escopo escrita.",
            caller.scope()
        ),
        Some(json!({ "tool": tool, "escopo": caller.scope().as_str() })),
    )
}

/// A tool the operator's policy switched off (ADR 0036): nothing ran. `read_only` when it is off
/// because the server (or the caller's catalog) is in read-only mode.
pub(crate) fn tool_disabled(tool: &str, read_only: bool) -> McpError {
    tracing::info!(tool, read_only, "tool call refused: disabled by the operator's policy");
    let why = if read_only { "O servidor está em modo somente leitura: " } else { "" };
    McpError::invalid_params(
        format!(
            "{why}A ferramenta {tool} está desativada pelo operador do servidor; nada foi alterado. \
             As leituras continuam disponíveis (cursos://catalogo, cursos://{{uuid}}). \
             Quando o operador a reativar, ela volta a aparecer em tools/list."
        ),
        Some(json!({ "tool": tool, "motivo": "desativada pelo operador" })),
    )
}

/// The prompt the operator's policy switched off (ADR 0036).
pub(crate) fn prompt_disabled(prompt: &str) -> McpError {
    McpError::invalid_params(
        format!(
            "O prompt {prompt} está desativado pelo operador do servidor. \
             Quando o operador o reativar, ele volta a aparecer em prompts/list."
        ),
        Some(json!({ "prompt": prompt, "motivo": "desativado pelo operador" })),
    )
}
