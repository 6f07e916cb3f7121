//! In-memory transport: a client and a server in one process, connected by a pipe that carries
//! the same newline-delimited JSON as stdio (so tests exercise the real framing and codecs).
//!
//! Give [`Pipe::server`] to a server's `serve_io` and [`Pipe::client`] to a client's
//! `connect_io`. Any other byte stream (a socket, a child process) plugs into the same two
//! methods: that is how to bring your own transport.

use tokio::io::{DuplexStream, ReadHalf, WriteHalf};

/// One end of an in-memory connection.
#[derive(Debug)]
pub struct End {
    /// What the peer wrote.
    pub reader: ReadHalf<DuplexStream>,
    /// Where to write for the peer.
    pub writer: WriteHalf<DuplexStream>,
}

/// A connected pair: give `client` to the client and `server` to the server.
#[derive(Debug)]
pub struct Pipe {
    /// The client's end.
    pub client: End,
    /// The server's end.
    pub server: End,
}

/// Creates a connected pair with a 1 MiB buffer in each direction.
pub fn pipe() -> Pipe {
    let (a, b) = tokio::io::duplex(1024 * 1024);
    let (client_reader, client_writer) = tokio::io::split(a);
    let (server_reader, server_writer) = tokio::io::split(b);
    Pipe {
        client: End {
            reader: client_reader,
            writer: client_writer,
        },
        server: End {
            reader: server_reader,
            writer: server_writer,
        },
    }
}
