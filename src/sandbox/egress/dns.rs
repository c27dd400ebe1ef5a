//! The sandbox's DNS, answered by the console: a name on the allow-list (or under Static
//! hosts) gets a synthetic address the console maps back when the program connects; any
//! other name gets NXDOMAIN, and no query ever leaves.

use simple_dns::{
    rdata::{RData, A},
    Packet, PacketFlag, ResourceRecord, CLASS, QCLASS, QTYPE, RCODE, TYPE,
};

use super::session::Session;

/// Answers one query datagram; `None` for something that is not a query (it is dropped).
pub fn answer(session: &Session, query: &[u8]) -> Option<Vec<u8>> {
    let query = Packet::parse(query).ok()?;
    let mut reply = Packet::new_reply(query.id());
    reply.set_flags(PacketFlag::RECURSION_AVAILABLE);
    if query.has_flags(PacketFlag::RECURSION_DESIRED) {
        reply.set_flags(PacketFlag::RECURSION_DESIRED);
    }
    let Some(question) = query.questions.first() else {
        *reply.rcode_mut() = RCODE::FormatError;
        return reply.build_bytes_vec().ok();
    };
    reply.questions.push(question.clone());
    let name = question
        .qname
        .to_string()
        .trim_end_matches('.')
        .to_ascii_lowercase();
    let internet = matches!(question.qclass, QCLASS::CLASS(CLASS::IN) | QCLASS::ANY);
    if !internet || !session.policy.knows(&name) {
        session.deny("dns", Some(&name), None, 53, None);
        *reply.rcode_mut() = RCODE::NameError;
        return reply.build_bytes_vec().ok();
    }
    // Only A records: the sandbox has IPv4 alone, and an empty AAAA answer sends clients
    // straight to the A one.
    if question.qtype == QTYPE::TYPE(TYPE::A) {
        let Some(address) = session.address_for(&name) else {
            *reply.rcode_mut() = RCODE::Refused;
            return reply.build_bytes_vec().ok();
        };
        reply.answers.push(ResourceRecord::new(
            question.qname.clone(),
            CLASS::IN,
            5,
            RData::A(A {
                address: u32::from(address),
            }),
        ));
    }
    reply.build_bytes_vec().ok()
}

#[cfg(test)]
mod tests {
    use std::{net::Ipv4Addr, sync::Arc};

    use simple_dns::{Name, Question};

    use super::*;
    use crate::sandbox::egress::policy::Policy;

    fn query(name: &str, qtype: TYPE) -> Vec<u8> {
        let mut packet = Packet::new_query(7);
        packet.set_flags(PacketFlag::RECURSION_DESIRED);
        packet.questions.push(Question::new(
            Name::new_unchecked(name),
            qtype.into(),
            CLASS::IN.into(),
            false,
        ));
        packet.build_bytes_vec().unwrap()
    }

    #[test]
    fn allowed_names_get_a_synthetic_address_and_others_nxdomain() {
        let policy = Policy::parse("files.test:8443", "other.test 127.0.0.1", 1 << 20).unwrap();
        let session = Session::new(Arc::new(policy));

        let reply = answer(&session, &query("Files.Test", TYPE::A)).unwrap();
        let reply = Packet::parse(&reply).unwrap();
        assert_eq!(reply.id(), 7);
        assert_eq!(reply.rcode(), RCODE::NoError);
        let RData::A(a) = &reply.answers[0].rdata else {
            panic!("an A record: {reply:?}");
        };
        let address = Ipv4Addr::from(a.address);
        assert_eq!(
            session.name_of(address.into()).as_deref(),
            Some("files.test")
        );

        // A static name resolves too (whether it may be reached is the connection's matter).
        let reply = answer(&session, &query("other.test", TYPE::A)).unwrap();
        assert_eq!(Packet::parse(&reply).unwrap().answers.len(), 1);

        let reply = answer(&session, &query("files.test", TYPE::AAAA)).unwrap();
        let reply = Packet::parse(&reply).unwrap();
        assert_eq!((reply.rcode(), reply.answers.len()), (RCODE::NoError, 0));

        let reply = answer(&session, &query("evil.example", TYPE::A)).unwrap();
        let reply = Packet::parse(&reply).unwrap();
        assert_eq!((reply.rcode(), reply.answers.len()), (RCODE::NameError, 0));
        let report = session.finish();
        assert_eq!(report.egress_denied, 1);
        assert_eq!(report.connections[0].name.as_deref(), Some("evil.example"));
        assert_eq!(report.connections[0].protocol, "dns");

        assert_eq!(answer(&session, b"not dns"), None);
    }
}
