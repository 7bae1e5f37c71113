//! `mcp-cursos-backend health`, the container health check: the real binary probing the real
//! backend over loopback.

use crate::support::{binary, fresh_database, start_backend};

fn probe(port: &str, host: &str) -> std::process::Output {
    std::process::Command::new(binary("mcp-cursos-backend"))
        .arg("health")
        .env_clear()
        .env("HOST", host)
        .env("PORT", port)
        .output()
        .expect("run health")
}

#[tokio::test]
async fn the_health_command_succeeds_against_a_running_backend_and_fails_once_it_stopped() {
    let (_folder, database) = fresh_database();
    let backend = start_backend(&database, Some("chave-da-sonda-de-teste")).await;
    let port = backend.base_url.rsplit(':').next().expect("port").to_owned();
    for host in ["127.0.0.1", "0.0.0.0"] {
        let output = tokio::task::spawn_blocking({
            let port = port.clone();
            move || probe(&port, host)
        })
        .await
        .expect("probe");
        assert!(output.status.success(), "HOST={host}: {}", String::from_utf8_lossy(&output.stderr));
        assert!(output.stdout.is_empty(), "nothing on stdout");
    }
    assert!(backend.stop().await.success());
    let output = tokio::task::spawn_blocking(move || probe(&port, "127.0.0.1")).await.expect("probe");
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("no answer from 127.0.0.1:"), "{stderr}");
}
