//! Issue 24, item 11: every structured result of every tool, in every state (an empty catalog,
//! the first, a middle and the last page, each refusal, each write), validates against the
//! `outputSchema` that tool declares in `tools/list`, with a real JSON Schema validator
//! (`jsonschema`, draft 2020-12 as the schemas declare), on both eras. The official TypeScript and
//! Python clients validate the same way and refuse a result that breaks its schema.

use std::collections::BTreeMap;

use super::apps::{RendersApps, tool_list};
use super::*;

/// The validators of the tools `client` is offered that declare an `outputSchema`.
async fn validators<H: rmcp::ClientHandler>(
    client: &RunningService<RoleClient, H>,
) -> BTreeMap<String, jsonschema::Validator> {
    let mut validators = BTreeMap::new();
    for tool in tool_list(client).await {
        if let Some(schema) = tool.get("outputSchema") {
            let name = tool["name"].as_str().expect("name").to_owned();
            let validator = jsonschema::validator_for(schema).unwrap_or_else(|error| panic!("{name}: {error}"));
            validators.insert(name, validator);
        }
    }
    validators
}

/// Calls and validates; counts what was checked per tool.
struct Checker<'a, H: rmcp::ClientHandler> {
    client: &'a RunningService<RoleClient, H>,
    validators: BTreeMap<String, jsonschema::Validator>,
    checked: BTreeMap<String, usize>,
    era: Era,
}

impl<H: rmcp::ClientHandler> Checker<'_, H> {
    async fn call(&mut self, tool: &str, arguments: Value) -> CallToolResult {
        let result = call_as(self.client, tool, arguments.clone()).await;
        self.check(tool, &arguments, &result);
        result
    }

    fn check(&mut self, tool: &str, arguments: &Value, result: &CallToolResult) {
        let Some(structured) = &result.structured_content else {
            // A refusal carries no structured content (nothing to validate), a success must.
            assert_eq!(
                result.is_error,
                Some(true),
                "{:?} {tool} {arguments}: a success without structuredContent",
                self.era
            );
            return;
        };
        let validator = self.validators.get(tool).unwrap_or_else(|| panic!("{tool} declares no outputSchema"));
        let errors: Vec<String> =
            validator.iter_errors(structured).map(|error| format!("{} at {}", error, error.instance_path())).collect();
        assert!(
            errors.is_empty(),
            "{:?} {tool} {arguments}: breaks its outputSchema: {errors:?}\n{structured:#}",
            self.era
        );
        *self.checked.entry(tool.to_owned()).or_default() += 1;
    }

    /// Every page of a paged tool, following `proximaPagina` until it is `null`.
    async fn every_page(&mut self, tool: &str) -> usize {
        let mut arguments = json!({});
        let mut pages = 0;
        loop {
            let page = self.call(tool, arguments).await.structured_content.expect("a page");
            pages += 1;
            match &page["proximaPagina"] {
                Value::String(next) => arguments = json!({"pagina": next}),
                Value::Null => return pages,
                other => panic!("{tool}: proximaPagina is {other}"),
            }
        }
    }
}

#[tokio::test]
async fn every_structured_result_of_every_tool_matches_its_own_output_schema_in_every_state_on_both_eras() {
    for era in ERAS {
        let options = ServerOptions { resource_tools: true, ..ServerOptions::default() };
        let harness = connect_with(era, options).await;
        let host = attach(RendersApps::HTML, &harness.state, era).await;
        let validators = validators(&host).await;
        let declared: Vec<&String> = validators.keys().collect();
        for tool in [
            "arquivar_curso",
            "atualizar_curso",
            "criar_curso",
            "interface_buscar_cursos",
            "ler_curso",
            "listar_cursos",
            "ver_catalogo",
        ] {
            assert!(validators.contains_key(tool), "{era:?}: {tool} declares an outputSchema: {declared:?}");
        }
        let mut checker = Checker { client: &host, validators, checked: BTreeMap::new(), era };
        let unknown = "1b4e28ba-2fa1-41d2-883f-0016d3cca427";

        // An empty catalog: one last page, no match.
        assert_eq!(checker.every_page("listar_cursos").await, 1);
        assert_eq!(checker.every_page("ver_catalogo").await, 1);
        checker.call("interface_buscar_cursos", json!({"texto": "nada"})).await;
        checker.call("interface_buscar_cursos", json!({})).await;

        // Each refusal.
        checker.call("criar_curso", json!({"titulo": "", "cargaHoraria": 0})).await;
        checker.call("atualizar_curso", json!({"id": unknown, "cargaHoraria": 5})).await;
        checker.call("arquivar_curso", json!({"id": unknown})).await;
        checker.call("ler_curso", json!({"id": unknown})).await;
        checker.call("listar_cursos", json!({"pagina": "cursos://catalogo?pagina=nao-existe"})).await;

        // Writes, reads, and a refusal of each kind on a real course.
        let created = checker.call("criar_curso", json!({"titulo": "Rust", "cargaHoraria": 10})).await;
        let course = created.structured_content.expect("the course");
        checker.call("criar_curso", json!({"titulo": "rust", "cargaHoraria": 3})).await;
        checker.call("atualizar_curso", json!({"id": course["id"], "cargaHoraria": 20})).await;
        checker.call("atualizar_curso", json!({"id": course["id"], "cargaHoraria": 30, "versao": 1})).await;
        checker.call("ler_curso", json!({"id": course["id"]})).await;
        // This host cannot confirm: refused; the harness's client confirms: archived, then a no-op.
        checker.call("arquivar_curso", json!({"id": course["id"]})).await;
        let archived = harness.call("arquivar_curso", json!({"id": course["id"]})).await;
        checker.check("arquivar_curso", &json!({"id": course["id"]}), &archived);
        checker.call("arquivar_curso", json!({"id": course["id"]})).await;
        checker.call("ler_curso", json!({"id": course["id"]})).await;

        // The first, a middle and the last page.
        harness.seed(250).await;
        assert_eq!(checker.every_page("listar_cursos").await, 3, "{era:?}");
        assert_eq!(checker.every_page("ver_catalogo").await, 3, "{era:?}");
        checker.call("interface_buscar_cursos", json!({"texto": "semeado"})).await;
        checker.call("interface_buscar_cursos", json!({"texto": "0042"})).await;

        let checked = checker.checked;
        for tool in ["listar_cursos", "ver_catalogo", "criar_curso", "atualizar_curso", "arquivar_curso", "ler_curso"] {
            assert!(
                checked.get(tool).copied().unwrap_or(0) >= 1,
                "{era:?}: no structured result of {tool} was checked: {checked:?}"
            );
        }
        eprintln!("{era:?}: structured results validated per tool: {checked:?}");
    }
}
