//! `mcp-cursos-backend health`: asks a running backend's `GET /health`, for container health
//! checks in images without a shell or curl. One HTTP/1.1 request over loopback, no client crate.

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use super::settings::Settings;

/// How long the probe waits to connect, and then for the answer.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// Why the backend was not found healthy.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// HOST did not name an address to reach.
    #[error("cannot resolve HOST {0:?}")]
    Unresolvable(String),
    /// Nothing answered, or the connection broke.
    #[error("no answer from {address}: {source}")]
    Unreachable {
        /// Where the probe knocked.
        address: SocketAddr,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The backend answered something other than 200.
    #[error("{address} answered {status_line:?} to GET /health")]
    Unhealthy {
        /// Where the probe knocked.
        address: SocketAddr,
        /// The answer's status line.
        status_line: String,
    },
}

/// The address to probe for a server listening on `host:port`: a wildcard (`0.0.0.0`, `::`)
/// is reached on the loopback address of its family.
///
/// # Errors
/// [`ProbeError::Unresolvable`] when `host` names no address.
pub fn probe_address(host: &str, port: u16) -> Result<SocketAddr, ProbeError> {
    let address = (host, port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut addresses| addresses.next())
        .ok_or_else(|| ProbeError::Unresolvable(host.to_owned()))?;
    let ip = match address.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    Ok(SocketAddr::new(ip, port))
}

/// `GET /health` on `address`, with a `Host` the server's default check accepts when `address`
/// is loopback.
///
/// # Errors
/// [`ProbeError`] when nothing answers in [`PROBE_TIMEOUT`] or the answer is not 200.
pub fn check_health(address: SocketAddr) -> Result<(), ProbeError> {
    let unreachable = |source| ProbeError::Unreachable { address, source };
    let mut stream = TcpStream::connect_timeout(&address, PROBE_TIMEOUT).map_err(unreachable)?;
    stream.set_read_timeout(Some(PROBE_TIMEOUT)).map_err(unreachable)?;
    stream.set_write_timeout(Some(PROBE_TIMEOUT)).map_err(unreachable)?;
    let request = format!("GET /health HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).map_err(unreachable)?;
    let mut head = [0_u8; 64];
    let mut read = 0;
    while read < head.len() {
        match stream.read(&mut head[read..]).map_err(unreachable)? {
            0 => break,
            count => read += count,
        }
        if head[..read].contains(&b'\n') {
            break;
        }
    }
    let status_line = String::from_utf8_lossy(&head[..read]).lines().next().unwrap_or_default().trim().to_owned();
    if status_line.starts_with("HTTP/1.1 200 ") || status_line == "HTTP/1.1 200" {
        Ok(())
    } else {
        Err(ProbeError::Unhealthy { address, status_line })
    }
}

/// `health`: probes the backend of `settings` (HOST, PORT).
///
/// # Errors
/// [`ProbeError`] when it is not found healthy (the process then exits with status 1).
pub fn run(settings: &Settings) -> anyhow::Result<()> {
    check_health(probe_address(&settings.host, settings.port)?)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wildcard_host_is_probed_on_loopback_and_a_named_one_as_given() {
        assert_eq!(probe_address("0.0.0.0", 3000).expect("v4"), "127.0.0.1:3000".parse().expect("address"));
        assert_eq!(probe_address("::", 3000).expect("v6"), "[::1]:3000".parse().expect("address"));
        assert_eq!(probe_address("127.0.0.1", 8080).expect("v4"), "127.0.0.1:8080".parse().expect("address"));
    }

    #[test]
    fn nothing_listening_is_unhealthy_with_the_address_named() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let address = listener.local_addr().expect("address");
        drop(listener);
        let error = check_health(address).expect_err("nothing listens");
        assert!(error.to_string().contains(&address.to_string()), "{error}");
    }

    #[test]
    fn an_answer_other_than_200_is_unhealthy_and_200_is_healthy() {
        for (answer, healthy) in [("HTTP/1.1 200 OK\r\n\r\n", true), ("HTTP/1.1 403 Forbidden\r\n\r\n", false)] {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            let address = listener.local_addr().expect("address");
            let server = std::thread::spawn(move || {
                let (mut connection, _) = listener.accept().expect("accept");
                let mut request = [0_u8; 256];
                let read = connection.read(&mut request).expect("read");
                connection.write_all(answer.as_bytes()).expect("write");
                String::from_utf8_lossy(&request[..read]).into_owned()
            });
            assert_eq!(check_health(address).is_ok(), healthy, "{answer:?}");
            let request = server.join().expect("server");
            assert!(request.starts_with("GET /health HTTP/1.1\r\n"), "{request}");
            assert!(request.contains(&format!("Host: {address}\r\n")), "{request}");
        }
    }
}
