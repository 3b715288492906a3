//! Handshakes under way on an endpoint, bounded in total and per source, so that connections
//! that never finish their handshake cannot take every slot: one host's silent connections
//! fill only its own share, and each is closed after the handshake deadline.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::{Arc, Mutex};

/// The source a connection counts against: its IPv4 address, or the /64 of its IPv6 address
/// (one host usually holds a whole /64).
pub(super) fn source_of(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let bits = u128::from(v6) & !((1u128 << 64) - 1);
                IpAddr::V6(Ipv6Addr::from(bits))
            }
        },
    }
}

/// Which bound a connection met.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Full {
    /// Every slot of the endpoint is taken.
    Total,
    /// Every slot of this source is taken.
    Source,
}

#[derive(Default)]
struct Counts {
    total: usize,
    by_source: HashMap<IpAddr, usize>,
}

/// The handshakes pending on one endpoint.
pub(super) struct Pending {
    max_total: usize,
    max_per_source: usize,
    counts: Mutex<Counts>,
}

/// A pending handshake's slot; dropping it gives the slot back.
pub(super) struct Slot {
    pending: Arc<Pending>,
    source: IpAddr,
}

impl Pending {
    /// At most `max_total` handshakes at once, `max_per_source` of them from one source.
    pub fn new(max_total: usize, max_per_source: usize) -> Arc<Self> {
        Arc::new(Pending {
            max_total,
            max_per_source,
            counts: Mutex::default(),
        })
    }

    /// A slot for a connection from `ip`, unless a bound is met.
    pub fn enter(self: &Arc<Self>, ip: IpAddr) -> Result<Slot, Full> {
        let source = source_of(ip);
        let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        if counts.total >= self.max_total {
            return Err(Full::Total);
        }
        let mine = counts.by_source.entry(source).or_insert(0);
        if *mine >= self.max_per_source {
            return Err(Full::Source);
        }
        *mine += 1;
        counts.total += 1;
        Ok(Slot {
            pending: self.clone(),
            source,
        })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut counts = self
            .pending
            .counts
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        counts.total -= 1;
        if let Some(n) = counts.by_source.get_mut(&self.source) {
            *n -= 1;
            if *n == 0 {
                counts.by_source.remove(&self.source);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_bounded_per_source_and_in_total_and_given_back() {
        let p = Pending::new(3, 2);
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let a1 = p.enter(a).unwrap();
        let _a2 = p.enter(a).unwrap();
        assert_eq!(p.enter(a).err(), Some(Full::Source));
        let _b1 = p.enter(b).unwrap();
        assert_eq!(p.enter(b).err(), Some(Full::Total));
        drop(a1);
        assert!(p.enter(a).is_ok(), "a slot given back is taken again");
    }

    #[test]
    fn an_ipv6_host_counts_by_its_slash_64_and_mapped_ipv4_as_ipv4() {
        let x: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let y: IpAddr = "2001:db8:1:2:bbbb::9".parse().unwrap();
        let z: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(source_of(x), source_of(y));
        assert_ne!(source_of(x), source_of(z));
        let mapped: IpAddr = "::ffff:10.0.0.1".parse().unwrap();
        assert_eq!(source_of(mapped), "10.0.0.1".parse::<IpAddr>().unwrap());
    }
}
