import Engine
import Foundation
import Strata
import StrataSyncWire

/// Sync's protocol messages as a server and a client read them: none may trap, whatever the bytes, and what
/// decodes must encode back to the same change set.
package enum SyncWireFuzzing {
    package static func run(_ bytes: [UInt8]) -> String? {
        let data = Data(bytes)
        if let push = try? SyncWire.decode(PushRequest.self, from: data) {
            for set in push.changeSets {
                if let wrong = roundTrip(set) { return "a push's change set: \(wrong)" }
            }
        }
        if let pull = try? SyncWire.decode(PullResponse.self, from: data) {
            for c in pull.changes {
                if let wrong = roundTrip(c.changeSet) { return "a pull's change set: \(wrong)" }
            }
            _ = try? pull.snapshot?.decoded(clientSequence: pull.lastSequence)
        }
        _ = try? SyncWire.decode(PullRequest.self, from: data)
        _ = try? SyncWire.decode(SaltsRequest.self, from: data)
        _ = try? SyncWire.decode(SaltsResponse.self, from: data)
        _ = try? SyncWire.decode(WireError.self, from: data)
        // The bytes as one change set in its binary form.
        return roundTrip(EncodedChangeSet(bytes: data))
    }

    /// A change set that decodes must encode to bytes that decode to it again.
    static func roundTrip(_ encoded: EncodedChangeSet) -> String? {
        guard let set = try? encoded.decoded() else { return nil }
        let again = EncodedChangeSet(set)
        guard let back = try? again.decoded() else { return "a decoded change set's encoding does not decode" }
        return back == set ? nil : "a change set changes through encoding and decoding"
    }

    /// Valid messages: a push of change sets of every operation kind, a pull's answer with change sets and
    /// one with a snapshot, one that says diverged, pull requests (a recovery's among them), salts asked and
    /// given, and a refusal.
    package static var seeds: [[UInt8]] {
        let ref = ObjectReference(type: "Item", primaryKey: .string("a"))
        let other = ObjectReference(type: "Item", primaryKey: .int(7))
        let element = ElementID(client: 3, counter: 1)
        let ops: [ChangeOperation] = [
            .create(ref, values: ["id": .string("a"), "n": .double(.nan), "when": .date(Date(timeIntervalSince1970: 5))]),
            .set(ref, property: "owner", value: .link(other)),
            .set(ref, property: "address", value: .embedded(["city": .string("Oslo"), "zip": .int(150)])),
            .addInteger(ref, property: "count", amount: -3),
            .listInsert(ref, property: "tags", element: element, position: ListPosition(bytes: [0x80]), value: .string("x")),
            .listSet(ref, property: "tags", element: element, value: .list([.int(1), .dictionary(["k": .bool(true)])])),
            .listRemove(ref, property: "tags", element: element),
            .setInsert(ref, property: "labels", value: .uuid(UUID(uuidString: "9F3C2B1A-0000-4000-8000-000000000001")!)),
            .setRemove(ref, property: "labels", value: .data(Data([1, 2, 3]))),
            .mapPut(ref, property: "attributes", key: "k", value: .decimal(12)),
            .mapRemove(ref, property: "attributes", key: "k"),
            .delete(other),
        ]
        let set = ChangeSet(clientID: .max, sequence: 1, baseVersion: 0, schemaVersion: 2, operations: ops)
        var state: [UInt8] = []
        SyncCoding.write(SyncObjectState.deleted(Tombstone(version: 4, client: 9)), into: &state)
        var refBytes: [UInt8] = []
        SyncCoding.write(other, into: &refBytes)
        let encoder = SyncWire.encoder
        let messages: [any Encodable] = [
            PushRequest(clientID: .max, changeSets: [set]),
            PullRequest(clientID: 5, after: 3, waitMilliseconds: 100),
            PullRequest(clientID: 5, after: 3, afterSalt: 0x1234_5678_9ABC_DEF1),
            PullRequest(clientID: 5, after: 2, recovery: true, recoveryClientID: 6),
            PullResponse(changes: [], serverVersion: 0, lastSequence: 0, retryAfterMilliseconds: 200),
            PushRequest(clientID: 6, changeSets: [ChangeSet(clientID: 6, sequence: 1, baseVersion: 4, schemaVersion: 2, operations: ops,
                                                            recovery: .init(through: 9, carried: [.init(clientID: 5, sequence: 3)]))]),
            PullResponse(changes: [WireServerChangeSet(version: 1, salt: 77, changeSet: EncodedChangeSet(set))], serverVersion: 1, lastSequence: 1),
            PullResponse(changes: [], serverVersion: 4, lastSequence: 0,
                         snapshot: WireSnapshot(version: 4, salt: .max, objects: [.init(reference: Data(refBytes), state: Data(state))])),
            PullResponse(changes: [], serverVersion: 2, lastSequence: 1, diverged: true),
            SaltsRequest(clientID: 5, versions: [1, 9, .max]),
            SaltsResponse(salts: [3, 0, 0], compactedThrough: 1),
            WireError(.forbidden, "no"),
        ]
        return messages.compactMap { try? [UInt8](encoder.encode($0)) } + [SyncCoding.encode(set)]
    }
}
