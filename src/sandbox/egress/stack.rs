//! The console's end of a sandbox's TUN device. Every packet the sandbox sends arrives here:
//! DNS queries are answered (whatever server they were sent to), a TCP SYN to anything but an
//! allowed name and port is refused at once with a reset, other UDP and IPv6 are dropped, and
//! allowed connections go through a userspace TCP stack to [`relay::serve`].

use std::{
    collections::HashSet,
    net::{IpAddr, Ipv4Addr, SocketAddr},
    sync::Arc,
};

use etherparse::{NetSlice, PacketBuilder, SlicedPacket, TransportSlice};
use futures_util::{SinkExt, StreamExt};
use netstack_smoltcp::StackBuilder;
use tokio::sync::Semaphore;
use tun_rs::AsyncDevice;

use super::{dns, relay, session::Session};

pub const MTU: u16 = 1500;
/// Connections one run may have open at once; more are refused.
const MAX_OPEN: usize = 64;
/// Per-connection window of the userspace stack (both ways).
const WINDOW: u32 = 128 * 1024;

/// What to do with one packet from the sandbox.
enum Verdict {
    /// Into the TCP stack.
    Stack,
    /// Straight back into the sandbox (a DNS answer, a reset).
    Reply(Vec<u8>),
    Drop,
}

/// A reset answering a SYN, so the program's connect() fails at once (ECONNREFUSED).
fn reset(src: Ipv4Addr, dst: Ipv4Addr, src_port: u16, dst_port: u16, seq: u32) -> Vec<u8> {
    let builder = PacketBuilder::ipv4(dst.octets(), src.octets(), 64)
        .tcp(dst_port, src_port, 0, 0)
        .rst()
        .ack(seq.wrapping_add(1));
    let mut packet = Vec::with_capacity(builder.size(0));
    let _ = builder.write(&mut packet, &[]);
    packet
}

/// Decides one packet; logs what it refuses (UDP once per destination).
fn judge(session: &Session, packet: &[u8], udp_seen: &mut HashSet<SocketAddr>) -> Verdict {
    let Ok(sliced) = SlicedPacket::from_ip(packet) else {
        return Verdict::Drop;
    };
    let Some(NetSlice::Ipv4(ip)) = &sliced.net else {
        return Verdict::Drop;
    };
    let (src, dst) = (ip.header().source_addr(), ip.header().destination_addr());
    match &sliced.transport {
        Some(TransportSlice::Tcp(tcp)) => {
            if !tcp.syn() || tcp.ack() {
                return Verdict::Stack;
            }
            let port = tcp.destination_port();
            let refuse = |name: Option<&str>, address: Option<IpAddr>, reason: Option<String>| {
                session.deny("tcp", name, address, port, reason);
                Verdict::Reply(reset(
                    src,
                    dst,
                    tcp.source_port(),
                    port,
                    tcp.sequence_number(),
                ))
            };
            let name = session.name_of(IpAddr::V4(dst));
            if session.cut.is_cancelled() {
                let reason = "is refused: the run reached its traffic limit".to_owned();
                return refuse(name.as_deref(), Some(IpAddr::V4(dst)), Some(reason));
            }
            match name {
                None => refuse(None, Some(IpAddr::V4(dst)), None),
                Some(name) if !session.policy.allows(&name, port) => {
                    refuse(Some(&name), None, None)
                }
                Some(_) => Verdict::Stack,
            }
        }
        Some(TransportSlice::Udp(udp)) if udp.destination_port() == 53 => {
            match dns::answer(session, udp.payload()) {
                Some(answer) => {
                    let builder = PacketBuilder::ipv4(dst.octets(), src.octets(), 64)
                        .udp(53, udp.source_port());
                    let mut packet = Vec::with_capacity(builder.size(answer.len()));
                    match builder.write(&mut packet, &answer) {
                        Ok(()) => Verdict::Reply(packet),
                        Err(_) => Verdict::Drop,
                    }
                }
                None => Verdict::Drop,
            }
        }
        Some(TransportSlice::Udp(udp)) => {
            let target = SocketAddr::new(IpAddr::V4(dst), udp.destination_port());
            if udp_seen.len() < 64 && udp_seen.insert(target) {
                let name = session.name_of(IpAddr::V4(dst));
                let reason = "is refused: only DNS goes over UDP".to_owned();
                session.deny(
                    "udp",
                    name.as_deref(),
                    Some(IpAddr::V4(dst)),
                    target.port(),
                    Some(reason),
                );
            }
            Verdict::Drop
        }
        _ => Verdict::Drop,
    }
}

/// Serves the sandbox's network until the session closes (the run ended, or its budget is
/// spent). Errors of the device end it too: the sandbox then has no network at all.
pub async fn serve(device: AsyncDevice, session: Arc<Session>) {
    let built = StackBuilder::default()
        .enable_tcp(true)
        .enable_udp(false)
        .enable_icmp(false)
        .mtu(MTU.into())
        .tcp_recv_buffer_size(WINDOW)
        .tcp_send_buffer_size(WINDOW)
        .build();
    let Ok((stack, Some(runner), _, Some(mut listener))) = built else {
        tracing::error!("the egress TCP stack could not be built");
        return;
    };
    let runner = tokio::spawn(runner);
    let (mut into_stack, mut from_stack) = stack.split();
    let device = Arc::new(device);

    let from_sandbox = {
        let (device, session) = (device.clone(), session.clone());
        async move {
            let mut buffer = vec![0u8; usize::from(MTU) + 64];
            let mut udp_seen = HashSet::new();
            loop {
                let n = match device.recv(&mut buffer).await {
                    Ok(n) => n,
                    Err(_) => return,
                };
                match judge(&session, &buffer[..n], &mut udp_seen) {
                    Verdict::Stack => {
                        // A malformed packet is the sandbox's problem, not the stack's end.
                        if into_stack.send(buffer[..n].to_vec()).await.is_err() {
                            continue;
                        }
                    }
                    Verdict::Reply(packet) => {
                        let _ = device.send(&packet).await;
                    }
                    Verdict::Drop => {}
                }
            }
        }
    };
    let to_sandbox = {
        let device = device.clone();
        async move {
            while let Some(Ok(packet)) = from_stack.next().await {
                if device.send(&packet).await.is_err() {
                    return;
                }
            }
        }
    };
    let accept = {
        let session = session.clone();
        async move {
            let open = Arc::new(Semaphore::new(MAX_OPEN));
            while let Some((stream, _, destination)) = listener.next().await {
                let Ok(permit) = open.clone().try_acquire_owned() else {
                    let name = session.name_of(destination.ip());
                    let reason = format!("is refused: the run has {MAX_OPEN} connections open");
                    session.deny(
                        "tcp",
                        name.as_deref(),
                        None,
                        destination.port(),
                        Some(reason),
                    );
                    continue;
                };
                let session = session.clone();
                tokio::spawn(async move {
                    relay::serve(session, stream, destination).await;
                    drop(permit);
                });
            }
        }
    };
    tokio::select! {
        _ = from_sandbox => {}
        _ = to_sandbox => {}
        _ = accept => {}
        _ = session.closed.cancelled() => {}
    }
    runner.abort();
}
