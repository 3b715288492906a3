//! A man in the middle for the tests: a TCP proxy that forwards every connection to one
//! upstream address, frame by frame, and on request tampers with the frames the dialer sends
//! after its handshake, as someone on the path could: alters one, replays one, swaps two,
//! or injects a frame of its own. It holds no key.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Frames the dialer sends in the handshake (HELLO, RESPONSE): never tampered with.
const HANDSHAKE_FRAMES: usize = 2;

/// What to do to the next frame from the dialer.
#[derive(Debug, Clone)]
pub enum Tamper {
    /// Flip a bit of its last byte (its tag).
    Alter,
    /// Forward it twice.
    Replay,
    /// Forward the frame after it first.
    Reorder,
    /// Write these bytes (a frame as on the wire, its length first) before it.
    Inject(Vec<u8>),
}

#[derive(Default)]
struct State {
    plan: Mutex<VecDeque<Tamper>>,
    /// Tamperings done.
    done: AtomicU64,
    /// Connections the upstream end closed.
    upstream_closes: AtomicU64,
    /// The last frame the dialer sent after its handshake, as it was on the wire.
    last_frame: Mutex<Option<Vec<u8>>>,
    /// Every socket opened, to close them when the proxy goes.
    sockets: Mutex<Vec<TcpStream>>,
    stop: AtomicBool,
}

/// The proxy; dropping it closes every connection through it.
pub struct Proxy {
    addr: SocketAddr,
    state: Arc<State>,
}

impl Proxy {
    /// A proxy on 127.0.0.1 to `upstream`.
    pub fn start(upstream: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(State::default());
        let s = state.clone();
        std::thread::spawn(move || {
            while !s.stop.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((down, _)) => {
                        down.set_nonblocking(false).unwrap();
                        let Ok(up) = TcpStream::connect(upstream) else {
                            continue;
                        };
                        connect(&s, down, up);
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(2)),
                }
            }
        });
        Proxy { addr, state }
    }

    /// Where dialers connect.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Tampers with the next frame from the dialer (of whichever connection sends one).
    pub fn tamper(&self, t: Tamper) {
        self.state.plan.lock().unwrap().push_back(t);
    }

    /// Tamperings done so far.
    pub fn tampered(&self) -> u64 {
        self.state.done.load(Ordering::SeqCst)
    }

    /// Connections the upstream end closed so far.
    pub fn upstream_closes(&self) -> u64 {
        self.state.upstream_closes.load(Ordering::SeqCst)
    }

    /// The last frame a dialer sent after its handshake, as it was on the wire.
    pub fn last_frame(&self) -> Option<Vec<u8>> {
        self.state.last_frame.lock().unwrap().clone()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.state.stop.store(true, Ordering::SeqCst);
        for s in self.state.sockets.lock().unwrap().iter() {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

/// Forwards `down` (the dialer's side) to `up` and back.
fn connect(state: &Arc<State>, down: TcpStream, up: TcpStream) {
    {
        let mut sockets = state.sockets.lock().unwrap();
        sockets.push(down.try_clone().unwrap());
        sockets.push(up.try_clone().unwrap());
    }
    let (mut down_r, mut up_w) = (down.try_clone().unwrap(), up.try_clone().unwrap());
    let s = state.clone();
    std::thread::spawn(move || {
        let _ = forward_frames(&s, &mut down_r, &mut up_w);
        let _ = up_w.shutdown(Shutdown::Write);
    });
    let (mut up_r, mut down_w) = (up, down);
    let s = state.clone();
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut up_r, &mut down_w);
        s.upstream_closes.fetch_add(1, Ordering::SeqCst);
        let _ = down_w.shutdown(Shutdown::Both);
    });
}

/// One frame from `r`, its length included.
fn read_frame(r: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len)?;
    let mut frame = len.to_vec();
    frame.resize(4 + u32::from_be_bytes(len) as usize, 0);
    r.read_exact(&mut frame[4..])?;
    Ok(frame)
}

/// Forwards the dialer's frames, tampering as planned after its handshake.
fn forward_frames(state: &State, r: &mut TcpStream, w: &mut TcpStream) -> std::io::Result<()> {
    for _ in 0..HANDSHAKE_FRAMES {
        w.write_all(&read_frame(r)?)?;
    }
    loop {
        let mut frame = read_frame(r)?;
        *state.last_frame.lock().unwrap() = Some(frame.clone());
        let planned = state.plan.lock().unwrap().pop_front();
        let tampered = planned.is_some();
        match planned {
            None => w.write_all(&frame)?,
            Some(Tamper::Alter) => {
                let last = frame.len() - 1;
                frame[last] ^= 1;
                w.write_all(&frame)?;
            }
            Some(Tamper::Replay) => {
                w.write_all(&frame)?;
                w.write_all(&frame)?;
            }
            Some(Tamper::Reorder) => {
                let next = read_frame(r)?;
                w.write_all(&next)?;
                w.write_all(&frame)?;
            }
            Some(Tamper::Inject(wire)) => {
                w.write_all(&wire)?;
                w.write_all(&frame)?;
            }
        }
        if tampered {
            state.done.fetch_add(1, Ordering::SeqCst);
        }
    }
}
