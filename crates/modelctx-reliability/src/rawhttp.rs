//! A raw HTTP/1.1 client over one TCP connection: every byte of the request is the caller's
//! (bodies of any size streamed from a repeated chunk, header values that are not text), and the
//! response is read while the body is still being written, as a server may answer early.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A request body.
#[derive(Debug, Clone)]
pub enum Body {
    /// These bytes, with `Content-Length`.
    Bytes(Vec<u8>),
    /// `chunk` repeated until `total` bytes, streamed; with `Content-Length` unless `chunked`
    /// (then `Transfer-Encoding: chunked`, one HTTP chunk per repetition).
    Repeat {
        /// The bytes repeated.
        chunk: Vec<u8>,
        /// The body length.
        total: usize,
        /// Chunked transfer coding instead of a length.
        chunked: bool,
    },
}

impl Body {
    fn length(&self) -> Option<usize> {
        match self {
            Self::Bytes(bytes) => Some(bytes.len()),
            Self::Repeat { total, chunked, .. } => (!chunked).then_some(*total),
        }
    }
}

/// A parsed response.
#[derive(Debug)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// Header names (lower-case) and values.
    pub headers: Vec<(String, String)>,
    /// The body (de-chunked).
    pub body: Vec<u8>,
    /// How many body bytes were written before the server answered or closed.
    pub body_written: usize,
}

impl Response {
    /// The first value of a header.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON.
    pub fn json(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }
}

/// `POST path` to `addr` with these headers (plus `Host` unless given, the body length and
/// `Connection: close`), answered within `timeout`.
///
/// # Errors
/// The connection failed, or closed before a complete response arrived.
pub async fn post(
    addr: SocketAddr,
    path: &str,
    headers: &[(String, Vec<u8>)],
    body: Body,
    timeout: Duration,
) -> io::Result<Response> {
    let stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let (mut reader, mut writer) = stream.into_split();
    let mut head = format!("POST {path} HTTP/1.1\r\n").into_bytes();
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
        head.extend_from_slice(format!("Host: 127.0.0.1:{}\r\n", addr.port()).as_bytes());
    }
    for (name, value) in headers {
        head.extend_from_slice(name.as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(value);
        head.extend_from_slice(b"\r\n");
    }
    match body.length() {
        Some(length) => head.extend_from_slice(format!("Content-Length: {length}\r\n").as_bytes()),
        None => head.extend_from_slice(b"Transfer-Encoding: chunked\r\n"),
    }
    head.extend_from_slice(b"Connection: close\r\n\r\n");
    let written = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = std::sync::Arc::clone(&written);
    let write = tokio::spawn(async move {
        writer.write_all(&head).await?;
        match body {
            Body::Bytes(bytes) => {
                writer.write_all(&bytes).await?;
                counter.fetch_add(bytes.len(), std::sync::atomic::Ordering::Relaxed);
            }
            Body::Repeat {
                chunk,
                total,
                chunked,
            } => {
                let mut left = total;
                while left > 0 {
                    let part = &chunk[..chunk.len().min(left)];
                    if chunked {
                        writer
                            .write_all(format!("{:x}\r\n", part.len()).as_bytes())
                            .await?;
                        writer.write_all(part).await?;
                        writer.write_all(b"\r\n").await?;
                    } else {
                        writer.write_all(part).await?;
                    }
                    left -= part.len();
                    counter.fetch_add(part.len(), std::sync::atomic::Ordering::Relaxed);
                }
                if chunked {
                    writer.write_all(b"0\r\n\r\n").await?;
                }
            }
        }
        writer.flush().await?;
        // Keep the write half open: shutting it down could end the request early for servers
        // that treat a half-close as the client going away.
        std::future::pending::<()>().await;
        Ok::<_, io::Error>(writer)
    });
    let read = tokio::time::timeout(timeout, read_response(&mut reader)).await;
    write.abort();
    let mut response =
        read.map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "no response in time"))??;
    response.body_written = written.load(std::sync::atomic::Ordering::Relaxed);
    Ok(response)
}

/// Reads until one complete response has arrived (by `Content-Length`, chunked coding or end of
/// stream).
async fn read_response(reader: &mut tokio::net::tcp::OwnedReadHalf) -> io::Result<Response> {
    let mut buffer = Vec::with_capacity(16 * 1024);
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let read = match reader.read(&mut chunk).await {
            Ok(n) => n,
            // A reset after a complete response still counts as the response.
            Err(error) => {
                return parse(&buffer, true).and_then(|r| r).ok_or(error);
            }
        };
        buffer.extend_from_slice(&chunk[..read]);
        if let Some(Some(response)) = parse(&buffer, read == 0) {
            return Ok(response);
        }
        if read == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "connection closed after {} bytes of an incomplete response",
                    buffer.len()
                ),
            ));
        }
    }
}

/// `None`: the head is incomplete; `Some(None)`: the body is incomplete.
fn parse(buffer: &[u8], at_end: bool) -> Option<Option<Response>> {
    let end = buffer.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&buffer[..end]);
    let mut lines = head.split("\r\n");
    let status = lines
        .next()?
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse::<u16>().ok())?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let rest = &buffer[end + 4..];
    let find = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    let body = if let Some(length) = find("content-length").and_then(|l| l.parse::<usize>().ok()) {
        if rest.len() < length {
            return Some(None);
        }
        rest[..length].to_vec()
    } else if find("transfer-encoding").is_some_and(|t| t.eq_ignore_ascii_case("chunked")) {
        match dechunk(rest) {
            Some(body) => body,
            None => return Some(None),
        }
    } else if at_end {
        rest.to_vec()
    } else {
        return Some(None);
    };
    Some(Some(Response {
        status,
        headers,
        body,
        body_written: 0,
    }))
}

/// The body of a complete chunked message, `None` while incomplete.
fn dechunk(mut data: &[u8]) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let line_end = data.windows(2).position(|w| w == b"\r\n")?;
        let size_text = std::str::from_utf8(&data[..line_end]).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        data = &data[line_end + 2..];
        if size == 0 {
            return Some(body);
        }
        if data.len() < size + 2 {
            return None;
        }
        body.extend_from_slice(&data[..size]);
        data = &data[size + 2..];
    }
}

/// Header pairs with text values, as [`post`] takes them.
pub fn text_headers(headers: &[(String, String)]) -> Vec<(String, Vec<u8>)> {
    headers
        .iter()
        .map(|(n, v)| (n.clone(), v.as_bytes().to_vec()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_lengths_and_chunks() {
        let r = parse(
            b"HTTP/1.1 413 Payload Too Large\r\ncontent-length: 3\r\n\r\nabc",
            false,
        )
        .unwrap()
        .unwrap();
        assert_eq!((r.status, r.body.as_slice()), (413, b"abc".as_slice()));
        assert!(matches!(
            parse(b"HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\nab", false),
            Some(None)
        ));
        let r = parse(
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nab\r\n1\r\nc\r\n0\r\n\r\n",
            false,
        )
        .unwrap()
        .unwrap();
        assert_eq!(r.body, b"abc");
        assert!(parse(b"HTTP/1.1 200", false).is_none());
    }
}
