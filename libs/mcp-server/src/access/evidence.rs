//! The evidence every history entry carries (ADR 0037): the protocol revision and the client the
//! request declared, and the hash of the capability surface the caller was offered.
//!
//! - The revision and the client come from the request itself on 2026-07-28 (its `_meta`), from
//!   the session's `initialize` before; what a client did not declare is recorded as not
//!   declared (`None`), never invented.
//! - The surface hash is SHA-256 over a canonical JSON (object keys sorted, no whitespace) of
//!   the definitions the caller is offered at that moment: tools, prompts, resource templates
//!   and static resources, each list in its listing's order. [`surface_hash`] is the one
//!   function that computes it; the server hands it the same lists its listings answer with.

use courses_domain::Evidence;
use rmcp::RoleServer;
use rmcp::model::{Prompt, ProtocolVersion, Resource, ResourceTemplate, Tool};
use rmcp::service::RequestContext;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The definitions a caller is offered.
pub(crate) struct Surface<'a> {
    pub(crate) tools: &'a [Tool],
    pub(crate) prompts: &'a [Prompt],
    pub(crate) resource_templates: &'a [ResourceTemplate],
    pub(crate) resources: &'a [Resource],
}

/// `sha256:<hex>` of the canonical JSON of `surface`.
pub(crate) fn surface_hash(surface: &Surface<'_>) -> String {
    let definitions = serde_json::json!({
        "tools": surface.tools,
        "prompts": surface.prompts,
        "resourceTemplates": surface.resource_templates,
        "resources": surface.resources,
    });
    let mut canonical = String::new();
    write_canonical(&definitions, &mut canonical);
    let digest = Sha256::digest(canonical.as_bytes());
    let mut hash = String::with_capacity(7 + 64);
    hash.push_str("sha256:");
    for byte in digest {
        hash.push_str(&format!("{byte:02x}"));
    }
    hash
}

/// `value` as JSON text with every object's keys sorted (serde_json here keeps insertion order).
fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|left, right| left.0.cmp(right.0));
            out.push('{');
            for (index, (key, item)) in entries.into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(item, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// The `_meta` key of the client a 2026-07-28 request declares.
const CLIENT_INFO_META: &str = "io.modelcontextprotocol/clientInfo";

/// The evidence of a write asked for by this request, offered the surface `surface_hash`.
pub(crate) fn of_request(context: &RequestContext<RoleServer>, surface_hash: String) -> Evidence {
    let modern = context.protocol_version().is_some_and(|version| version >= ProtocolVersion::V_2026_07_28);
    let (name, version) = if modern {
        // The request's own `_meta`, read as sent: rmcp's typed view needs both fields and
        // otherwise falls back to an implementation of its own (the SDK's name, issue 23).
        declared_client(context.meta.get(CLIENT_INFO_META))
    } else {
        // The session's `initialize`, whose `clientInfo` the SDK required whole.
        let info = context.peer.peer_info();
        let client = info.as_ref().map(|info| &info.client_info);
        let declared = |text: &str| (!text.is_empty()).then(|| text.to_owned());
        (client.and_then(|client| declared(&client.name)), client.and_then(|client| declared(&client.version)))
    };
    Evidence::new(context.protocol_version().map(|version| version.as_str().to_owned()), name, version, surface_hash)
}

/// The client's name and version as `client_info` declares them: each only if it is a
/// non-empty string, else not declared (`None`); never filled in.
fn declared_client(client_info: Option<&Value>) -> (Option<String>, Option<String>) {
    let field = |key: &str| {
        client_info
            .and_then(|info| info.get(key))
            .and_then(Value::as_str)
            .filter(|text| !text.is_empty())
            .map(str::to_owned)
    };
    (field("name"), field("version"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_canonical_form_sorts_keys_at_every_depth_and_keeps_array_order() {
        let value = serde_json::json!({"b": [{"z": 1, "a": "x\"y"}, 2], "a": null});
        let mut text = String::new();
        write_canonical(&value, &mut text);
        assert_eq!(text, r#"{"a":null,"b":[{"a":"x\"y","z":1},2]}"#);
    }

    #[test]
    fn a_client_is_recorded_as_declared_and_what_it_did_not_declare_as_not_declared() {
        let some = |text: &str| Some(text.to_owned());
        let info = serde_json::json!({"name": "meu-cliente", "version": "1.2"});
        assert_eq!(declared_client(Some(&info)), (some("meu-cliente"), some("1.2")));
        assert_eq!(declared_client(Some(&serde_json::json!({"name": "só-nome"}))), (some("só-nome"), None));
        assert_eq!(declared_client(Some(&serde_json::json!({"version": "2"}))), (None, some("2")));
        assert_eq!(declared_client(Some(&serde_json::json!({"name": "", "version": 3}))), (None, None));
        assert_eq!(declared_client(Some(&serde_json::json!({}))), (None, None));
        assert_eq!(declared_client(Some(&serde_json::json!("rmcp"))), (None, None));
        assert_eq!(declared_client(None), (None, None));
    }

    #[test]
    fn a_changed_definition_changes_the_hash_and_the_same_one_keeps_it() {
        let tools = [Tool::new("a", "uma ferramenta", std::sync::Arc::new(serde_json::Map::new()))];
        let other = [Tool::new("a", "outra descrição", std::sync::Arc::new(serde_json::Map::new()))];
        let surface = |tools| Surface { tools, prompts: &[], resource_templates: &[], resources: &[] };
        let hash = surface_hash(&surface(&tools));
        assert_eq!(hash, surface_hash(&surface(&tools)));
        assert_ne!(hash, surface_hash(&surface(&other)));
        assert!(hash.starts_with("sha256:") && hash.len() == 7 + 64, "{hash}");
    }
}
