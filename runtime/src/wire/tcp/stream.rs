//! The byte stream under a connection: plain TCP, or TLS over TCP
//! ([`framing::tls`](crate::wire::framing::tls)). A connection's reader and writer run
//! apart, so a stream splits into two halves: TCP's own halves, or halves of the TLS stream
//! that share its state.

use tokio::io::{AsyncRead, AsyncWrite, ReadHalf, WriteHalf};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio_rustls::TlsStream;

/// A connection's stream, which splits into a read half and a write half.
pub(super) trait Stream: AsyncRead + AsyncWrite + Send + Unpin + 'static {
    /// The read half.
    type Read: AsyncRead + Send + Unpin + 'static;
    /// The write half.
    type Write: AsyncWrite + Send + Unpin + 'static;
    /// The two halves.
    fn halves(self) -> (Self::Read, Self::Write);
}

impl Stream for TcpStream {
    type Read = OwnedReadHalf;
    type Write = OwnedWriteHalf;

    fn halves(self) -> (OwnedReadHalf, OwnedWriteHalf) {
        self.into_split()
    }
}

impl Stream for TlsStream<TcpStream> {
    type Read = ReadHalf<Self>;
    type Write = WriteHalf<Self>;

    fn halves(self) -> (Self::Read, Self::Write) {
        tokio::io::split(self)
    }
}
