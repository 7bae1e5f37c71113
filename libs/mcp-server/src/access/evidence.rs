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
use rmcp::model::{Prompt, Resource, ResourceTemplate, Tool};
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

/// The evidence of a write asked for by this request, offered the surface `surface_hash`.
pub(crate) fn of_request(context: &RequestContext<RoleServer>, surface_hash: String) -> Evidence {
    let client = context.client_info();
    let declared = |text: &str| (!text.is_empty()).then(|| text.to_owned());
    Evidence::new(
        context.protocol_version().map(|version| version.as_str().to_owned()),
        client.as_ref().and_then(|client| declared(&client.name)),
        client.as_ref().and_then(|client| declared(&client.version)),
        surface_hash,
    )
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
