//! Network namespaces for sandboxes on an allow-list: a TUN device the console reads is the
//! sandbox's only way out (its address covers every destination, so all traffic goes there),
//! created in a fresh namespace for a local jail or in a running container's namespace.
//!
//! Entering a namespace changes the calling thread only, so each of these runs on a thread of
//! its own that ends with it; no thread of the console's pools ever changes namespace.

use std::{fs::File, io, thread};

use nix::sched::CloneFlags;
use tun_rs::{DeviceBuilder, SyncDevice};

use super::{
    session::{DNS_ADDRESS, SANDBOX_ADDRESS},
    stack::MTU,
};

/// The TUN, up, with the sandbox's address and the namespace's default route through it
/// (via the DNS address: the TUN has no link layer, so the next hop is never looked up).
fn tun() -> io::Result<SyncDevice> {
    use netconfig_rs::sys::InterfaceExt;
    let device = DeviceBuilder::new()
        .name("egress0")
        .mtu(MTU)
        .packet_information(false)
        .build_sync()?;
    let index = device.if_index()?;
    let failed = |e: netconfig_rs::Error| io::Error::other(format!("egress0: {e}"));
    let interface = netconfig_rs::Interface::try_from_index(index).map_err(failed)?;
    let address = netconfig_rs::ipnet::IpNet::new(SANDBOX_ADDRESS.into(), 15)
        .map_err(|e| io::Error::other(e.to_string()))?;
    interface.add_address(address).map_err(failed)?;
    interface.set_up(true).map_err(failed)?;
    let default = route_manager::Route::new(std::net::Ipv4Addr::UNSPECIFIED.into(), 0)
        .with_gateway(DNS_ADDRESS.into())
        .with_if_index(index);
    route_manager::RouteManager::new()?.add(&default)?;
    Ok(device)
}

fn loopback_up() -> io::Result<()> {
    use netconfig_rs::sys::InterfaceExt;
    let failed = |e: netconfig_rs::Error| io::Error::other(format!("loopback: {e}"));
    let lo = netconfig_rs::Interface::try_from_name("lo").map_err(failed)?;
    lo.set_up(true).map_err(failed)
}

fn on_own_thread<T: Send>(work: impl FnOnce() -> io::Result<T> + Send) -> io::Result<T> {
    thread::scope(|scope| {
        thread::Builder::new()
            .name("sandbox-netns".into())
            .spawn_scoped(scope, work)?
            .join()
            .map_err(|_| io::Error::other("the namespace thread panicked"))?
    })
}

/// Runs `work` on a thread of its own inside a new network namespace that holds only
/// loopback and the TUN (given to `work`). A sandbox `work` forks inherits the namespace; the
/// thread ends with `work`, so the thread that forked lives as long as `work` waits (the
/// sandbox's supervisor dies with the thread that forked it).
pub fn in_new<T: Send>(work: impl FnOnce(SyncDevice) -> T + Send) -> io::Result<T> {
    on_own_thread(move || {
        nix::sched::unshare(CloneFlags::CLONE_NEWNET)?;
        loopback_up()?;
        let device = tun()?;
        Ok(work(device))
    })
}

/// Puts a TUN into the network namespace of process `pid` (a container's init).
pub fn tun_in_namespace_of(pid: u32) -> io::Result<SyncDevice> {
    let namespace = File::open(format!("/proc/{pid}/ns/net"))?;
    on_own_thread(move || {
        nix::sched::setns(&namespace, CloneFlags::CLONE_NEWNET)?;
        // gVisor with host networking leaves the namespace's loopback down: 127.0.0.1 would
        // otherwise be routed to the console.
        loopback_up()?;
        tun()
    })
}
