//! The operator's policy (ADR 0036), in process, on both eras: disabled tools and prompt leave
//! their lists and are refused in Portuguese with nothing written, read-only mode, the notices
//! clients get when the lists change, and the Portuguese answers to old and unknown tool names.

use mcp_cursos_e2e::{ListsRecorder, tool_names};
use mcp_server::{Policy, PolicyFile, PolicyReload};

use super::*;

fn policy(text: &str) -> Policy {
    Policy::parse(text).expect("a valid policy")
}

async fn prompt_names(harness: &Harness) -> Vec<String> {
    let prompts = harness.client.list_all_prompts().await.expect("prompts/list");
    prompts.into_iter().map(|prompt| prompt.name).collect()
}

/// The JSON-RPC error a call gets (it must not be a tool result).
async fn call_error(harness: &Harness, tool: &str, arguments: Value) -> rmcp::ErrorData {
    protocol_error(harness.try_call(tool, arguments).await, tool)
}

#[tokio::test]
async fn a_disabled_tool_leaves_tools_list_and_its_call_is_refused_in_portuguese_until_re_enabled() {
    for era in ERAS {
        let harness = connect(era).await;
        // A 2026-07-28 client keeps a listing for its ttlMs unless told of a change: this one
        // listens, as a host that wants to hear of list changes does (2025-era sessions are told).
        let filter = rmcp::model::SubscriptionFilter::builder().tools_list_changed().build();
        let mut listening = match era {
            Era::Initialize => None,
            Era::Discover => Some(harness.client.listen(filter).await.expect("subscriptions/listen")),
        };
        until_listen_streams(&harness.state, usize::from(listening.is_some())).await;
        assert_eq!(tool_names(&harness.client).await.len(), 3, "listed (and cached) before the change");
        harness.state.set_policy(policy("desativar ferramenta criar_curso\n"));
        if let Some(stream) = &mut listening {
            assert_eq!(next_stream_method(stream).await, "notifications/tools/list_changed");
        }
        assert_eq!(tool_names(&harness.client).await, ["arquivar_curso", "atualizar_curso"], "{era:?}");

        let error = call_error(&harness, "criar_curso", json!({"titulo": "Rust", "cargaHoraria": 10})).await;
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS, "{era:?}");
        assert!(error.message.contains("A ferramenta criar_curso está desativada pelo operador"), "{}", error.message);
        assert!(error.message.contains("nada foi alterado"), "{}", error.message);
        assert_eq!(harness.catalog_total().await, 0, "nothing was written ({era:?})");

        harness.state.set_policy(Policy::default());
        if let Some(stream) = &mut listening {
            assert_eq!(next_stream_method(stream).await, "notifications/tools/list_changed");
        }
        assert_eq!(tool_names(&harness.client).await, ["arquivar_curso", "atualizar_curso", "criar_curso"]);
        harness.create("Rust", 10).await;
        assert_eq!(harness.catalog_total().await, 1);
    }
}

#[tokio::test]
async fn read_only_mode_refuses_every_writing_tool_and_keeps_reads_prompts_and_completions() {
    for era in ERAS {
        let options = ServerOptions { resource_tools: true, ..ServerOptions::default() };
        let harness = connect_with(era, options).await;
        let course = harness.create("Rust", 10).await;
        harness.state.set_policy(policy("somente-leitura  # manutenção\n"));

        assert_eq!(tool_names(&harness.client).await, ["ler_curso", "listar_cursos"], "{era:?}");
        for (tool, arguments) in [
            ("criar_curso", json!({"titulo": "Go", "cargaHoraria": 5})),
            ("atualizar_curso", json!({"id": course["id"], "titulo": "Rust 2024"})),
            ("arquivar_curso", json!({"id": course["id"]})),
        ] {
            let error = call_error(&harness, tool, arguments).await;
            assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
            assert!(error.message.starts_with("O servidor está em modo somente leitura"), "{}", error.message);
            assert!(error.message.contains(&format!("{tool} está desativada pelo operador")), "{}", error.message);
        }
        let read = harness.read(&course_uri(&course)).await;
        assert_eq!(read, course, "unchanged and readable ({era:?})");
        assert_eq!(harness.catalog_total().await, 1);
        let listed = harness.call("listar_cursos", json!({})).await;
        assert_eq!(listed.is_error, Some(false), "read-only tools keep working");
        assert_eq!(prompt_names(&harness).await, ["criar-curso"]);
        let completion = harness.client.complete(id_completion("Ru")).await.expect("completion/complete");
        assert_eq!(completion.completion.values, [course["id"].as_str().expect("id")]);
    }
}

#[tokio::test]
async fn a_disabled_prompt_leaves_prompts_list_and_is_refused_in_portuguese() {
    for era in ERAS {
        let harness = connect(era).await;
        harness.state.set_policy(policy("desativar prompt criar-curso"));
        assert!(prompt_names(&harness).await.is_empty(), "{era:?}");
        let arguments = json!({"titulo": "Rust", "cargaHoraria": "10"});
        let error = protocol_error(harness.try_prompt(arguments.clone()).await, "the disabled prompt");
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
        assert!(error.message.contains("O prompt criar-curso está desativado pelo operador"), "{}", error.message);
        assert_eq!(tool_names(&harness.client).await.len(), 3, "the tools are untouched");
        harness.state.set_policy(Policy::default());
        harness.try_prompt(arguments).await.expect("re-enabled");
    }
}

async fn until_sessions(state: &ServerState, count: usize) {
    until_counts(state, &format!("expected {count} sessions"), |counts| counts.sessions == count).await;
}

#[tokio::test]
async fn a_2025_session_is_told_when_the_policy_changes_its_tools_or_prompts_and_only_then() {
    let harness = connect(Era::Initialize).await;
    let capabilities = serde_json::to_value(harness.client.peer_info().expect("server info")).expect("json");
    assert_eq!(capabilities["capabilities"]["tools"]["listChanged"], true, "{capabilities}");
    assert_eq!(capabilities["capabilities"]["prompts"]["listChanged"], true, "{capabilities}");
    let (sender, mut received) = tokio::sync::mpsc::unbounded_channel();
    let listener = attach(ListsRecorder(sender), &harness.state, Era::Initialize).await;
    until_sessions(&harness.state, 2).await;

    harness.state.set_policy(policy("somente-leitura"));
    assert_eq!(next_notice(&mut received).await, "tools");
    // Disabling a tool read-only mode already disabled changes no list: no notice. The next one
    // received is the prompt's.
    harness.state.set_policy(policy("somente-leitura\ndesativar ferramenta arquivar_curso"));
    harness
        .state
        .set_policy(policy("somente-leitura\ndesativar ferramenta arquivar_curso\ndesativar prompt criar-curso"));
    assert_eq!(next_notice(&mut received).await, "prompts");
    harness.state.set_policy(Policy::default());
    assert_eq!(notices(&mut received, 2).await, ["prompts", "tools"]);
    assert_eq!(tool_names(&harness.client).await.len(), 3, "everything is back");
    listener.cancel().await.expect("close");
}

/// The method of the next notification on `subscription`.
async fn next_stream_method(subscription: &mut rmcp::service::Subscription) -> String {
    next_stream_notice(subscription).await["method"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn a_2026_listen_stream_that_asked_for_list_changes_is_told_when_the_policy_changes_them() {
    let harness = connect(Era::Discover).await;
    let listener = attach((), &harness.state, Era::Discover).await;
    let filter = rmcp::model::SubscriptionFilter::builder().tools_list_changed().prompts_list_changed().build();
    let mut subscription = listener.listen(filter).await.expect("subscriptions/listen");
    let resources_only = rmcp::model::SubscriptionFilter::builder().resources_list_changed().build();
    let mut other = listener.listen(resources_only).await.expect("subscriptions/listen");
    until_listen_streams(&harness.state, 2).await;

    harness.state.set_policy(policy("desativar ferramenta arquivar_curso"));
    assert_eq!(next_stream_method(&mut subscription).await, "notifications/tools/list_changed");
    assert!(!tool_names(&harness.client).await.contains(&"arquivar_curso".to_owned()));
    harness.state.set_policy(policy("desativar prompt criar-curso"));
    let mut seen = vec![next_stream_method(&mut subscription).await, next_stream_method(&mut subscription).await];
    seen.sort();
    assert_eq!(seen, ["notifications/prompts/list_changed", "notifications/tools/list_changed"]);

    // The stream that asked only for resources hears nothing of it: its next notice is a course's.
    harness.create("Rust", 10).await;
    assert_eq!(next_stream_method(&mut other).await, "notifications/resources/list_changed");
    subscription.cancel().await.expect("cancel");
    other.cancel().await.expect("cancel");
    listener.cancel().await.expect("close");
}

#[tokio::test]
async fn old_tool_names_get_a_portuguese_pointer_to_the_resource_and_unknown_names_a_portuguese_error() {
    for era in ERAS {
        let harness = connect(era).await;
        let error = call_error(&harness, "listar_cursos", json!({})).await;
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS, "{era:?}");
        assert!(error.message.contains("leia o recurso cursos://catalogo"), "{}", error.message);
        assert_eq!(error.data.as_ref().expect("data")["recurso"], "cursos://catalogo");

        let error = call_error(&harness, "buscar_curso", json!({"id": "x"})).await;
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
        assert!(error.message.contains("buscar_curso não existe mais"), "{}", error.message);
        assert!(error.message.contains("cursos://{uuid}"), "{}", error.message);
        assert!(!error.message.contains("ler_curso"), "not offered when off: {}", error.message);

        let error = call_error(&harness, "apagar_tudo", json!({})).await;
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
        assert!(error.message.starts_with("Ferramenta desconhecida: \"apagar_tudo\""), "{}", error.message);
        assert!(!error.message.contains("tool not found"));

        let with_tools = connect_with(era, ServerOptions { resource_tools: true, ..ServerOptions::default() }).await;
        let error = call_error(&with_tools, "buscar_curso", json!({"id": "x"})).await;
        assert!(error.message.contains("ou chame a ferramenta ler_curso"), "{}", error.message);
        assert_eq!(with_tools.call("listar_cursos", json!({})).await.is_error, Some(false), "listed and served");
    }
}

#[tokio::test]
async fn a_policy_file_edited_while_running_is_followed_and_a_bad_edit_keeps_the_policy_in_force() {
    let harness = connect(Era::Initialize).await;
    let folder = tempfile::tempdir().expect("temp dir");
    let path = folder.path().join("politica");
    std::fs::write(&path, "# tudo ativo\n").expect("write");
    let (file, initial) = PolicyFile::load(&path).expect("valid at start");
    assert_eq!(initial, Policy::default());
    assert_eq!(file.reload(&harness.state), PolicyReload::Unchanged);

    std::fs::write(&path, "somente-leitura\n").expect("write");
    assert!(matches!(file.reload(&harness.state), PolicyReload::Replaced(changed) if changed.tools));
    assert!(
        call_error(&harness, "criar_curso", json!({"titulo": "Rust", "cargaHoraria": 10}))
            .await
            .message
            .contains("desativada pelo operador")
    );

    // A typo, an empty file (an editor's truncate-then-write) or a missing one: the policy stays.
    for bad in [Some("desativar ferramenta criar-curso\n"), Some(""), None] {
        match bad {
            Some(text) => std::fs::write(&path, text).expect("write"),
            None => std::fs::remove_file(&path).expect("remove"),
        }
        assert_eq!(file.reload(&harness.state), PolicyReload::KeptPrevious, "{bad:?}");
        assert_eq!(tool_names(&harness.client).await, Vec::<String>::new(), "still read-only after {bad:?}");
    }
    std::fs::write(&path, "\n").expect("write");
    assert!(matches!(file.reload(&harness.state), PolicyReload::Replaced(changed) if changed.tools));
    harness.create("Rust", 10).await;

    std::fs::write(&path, "desativar ferramenta apagar_curso\n").expect("write");
    let error = PolicyFile::load(&path).expect_err("invalid at start");
    assert_eq!(
        error.to_string(),
        "line 1: unknown tool \"apagar_curso\": the tools are criar_curso, atualizar_curso, arquivar_curso, listar_cursos, ler_curso, ver_catalogo, interface_buscar_cursos, interface_arquivar_curso"
    );
}

/// A rule after `catalogo <nome>` applies to the callers of that catalog only (ADR 0035, 0036):
/// two servers on one store, one per catalog, under the same policy.
#[tokio::test]
async fn a_catalogs_rule_applies_to_its_callers_and_not_to_another_catalogs() {
    use courses_domain::CatalogName;
    let (catalog, _database) = open_catalog();
    let rule = "catalogo azul desativar ferramenta criar_curso\n";
    let azul = ServerState::new(catalog.clone(), ServerOptions::default())
        .with_local_catalog(CatalogName::parse("azul").expect("name"))
        .with_policy(policy(rule));
    let verde = ServerState::new(catalog, ServerOptions::default())
        .with_local_catalog(CatalogName::parse("verde").expect("name"))
        .with_policy(policy(rule));
    for era in ERAS {
        let of_azul = attach(Answering::CONFIRMS, &azul, era).await;
        let of_verde = attach(Answering::CONFIRMS, &verde, era).await;
        let azul_tools = tool_names(&of_azul).await;
        assert!(!azul_tools.contains(&"criar_curso".to_owned()), "{era:?}: {azul_tools:?}");
        let verde_tools = tool_names(&of_verde).await;
        assert!(verde_tools.contains(&"criar_curso".to_owned()), "{era:?}: {verde_tools:?}");

        let title = format!("Rust {era:?}");
        let arguments = json!({"titulo": title, "cargaHoraria": 10});
        let refused = mcp_cursos_e2e::try_call(&of_azul, "criar_curso", arguments.clone()).await;
        let error = protocol_error(refused, "azul's call");
        assert!(error.message.contains("desativada pelo operador"), "{}", error.message);
        let created = call_as(&of_verde, "criar_curso", arguments).await;
        assert_eq!(created.is_error, Some(false), "{created:?}");
        of_azul.cancel().await.expect("close");
        of_verde.cancel().await.expect("close");
    }
}
