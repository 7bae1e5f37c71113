//! The one writer of stdout: rmcp's messages and the line gate's answers, never interleaved.

use std::io;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

/// Copies what the server writes (`from_server`, newline-delimited JSON-RPC) to `output`, and
/// writes each of `answers` (whole lines) only between two of the server's lines. Returns once
/// both have ended and everything is flushed.
///
/// # Errors
/// The error writing `output` (the host closed stdout) or reading `from_server`.
pub async fn write_output<S, O>(
    mut from_server: S,
    mut answers: mpsc::Receiver<Vec<u8>>,
    mut output: O,
) -> io::Result<()>
where
    S: AsyncRead + Unpin,
    O: AsyncWrite + Unpin,
{
    let mut buffer = vec![0_u8; 64 * 1024];
    let mut at_line_start = true;
    let mut server_open = true;
    let mut answers_open = true;
    loop {
        tokio::select! {
            biased;
            answer = answers.recv(), if at_line_start && answers_open => match answer {
                Some(line) => {
                    output.write_all(&line).await?;
                    output.flush().await?;
                }
                None => answers_open = false,
            },
            read = from_server.read(&mut buffer), if server_open => match read? {
                0 => server_open = false,
                read => {
                    output.write_all(&buffer[..read]).await?;
                    output.flush().await?;
                    at_line_start = buffer[read - 1] == b'\n';
                }
            },
            else => break,
        }
    }
    output.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn read_exactly(output: &mut tokio::io::DuplexStream, length: usize) -> Vec<u8> {
        let mut read = vec![0_u8; length];
        tokio::time::timeout(std::time::Duration::from_secs(5), output.read_exact(&mut read))
            .await
            .expect("in time")
            .expect("read");
        read
    }

    #[tokio::test]
    async fn an_answer_waits_for_the_end_of_the_line_the_server_is_writing() {
        let (mut server, from_server) = tokio::io::duplex(1024);
        let (answers, answers_received) = mpsc::channel(4);
        let (output, mut written) = tokio::io::duplex(1024);
        let writer = tokio::spawn(write_output(from_server, answers_received, output));

        server.write_all(b"{\"jsonrpc\":\"2.0\",").await.expect("write");
        assert_eq!(read_exactly(&mut written, 17).await, b"{\"jsonrpc\":\"2.0\",");
        // The writer is now in the middle of the server's line.
        answers.send(b"{\"resposta\":1}\n".to_vec()).await.expect("send");
        server.write_all(b"\"id\":1,\"result\":{}}\n").await.expect("write");
        drop(server);
        drop(answers);
        let mut rest = Vec::new();
        written.read_to_end(&mut rest).await.expect("read");
        assert_eq!(rest, b"\"id\":1,\"result\":{}}\n{\"resposta\":1}\n");
        writer.await.expect("joined").expect("written");
    }

    #[tokio::test]
    async fn it_ends_when_the_server_and_the_answers_have_both_ended() {
        let (server, from_server) = tokio::io::duplex(64);
        let (answers, answers_received) = mpsc::channel(4);
        let (output, mut written) = tokio::io::duplex(1024);
        let writer = tokio::spawn(write_output(from_server, answers_received, output));
        answers.send(b"{\"a\":1}\n".to_vec()).await.expect("send");
        drop(answers);
        drop(server);
        writer.await.expect("joined").expect("written");
        let mut all = Vec::new();
        written.read_to_end(&mut all).await.expect("read");
        assert_eq!(all, b"{\"a\":1}\n");
    }
}
