import Foundation
import StrataSync
import StrataSyncWire
import Testing
import TestSupport

@testable import Strata

/// Snapshots in pages: a new client's first download from a real server, while another client writes.
@Suite(.serialized) struct SyncSnapshotPageTests {
    typealias Setup = SyncServerTests.Setup

    /// The pages of one snapshot are read at different versions; the catch-up rounds make them the state at one.
    /// Between pages, a writer edits objects of pages already read and of pages still to come, deletes one and
    /// creates others: the assembled snapshot equals the server's whole snapshot taken afterwards, byte for byte.
    @Test func aSnapshotInPagesIsTheStateAtOneVersionWhileAnotherClientWrites() async throws {
        try await Setup.with { setup in
        let token = try SyncServerProcess.token(write: ["team"])
        let writer = setup.config("writer.realm", token: token)
        try SyncServerTests.write(writer) { r in
            for i in 0..<20 {
                let item = SyncItem(String(format: "i%02d", i), title: "v0")
                item.count = i
                item.tags.append("t\(i)")
                r.add(item)
            }
        }
        try await setup.session(writer).wait(for: .upload)

        // The edits made after each page: of objects read already (i00, i01, i02 come first), of objects not yet
        // read, a deletion, creations on both sides of the walk, an increment.
        let edits: [(Realm) -> Void] = [
            { r in r.object(ofType: SyncItem.self, forPrimaryKey: "i00")!.title = "edited after page 1" },
            { r in
                r.delete(r.object(ofType: SyncItem.self, forPrimaryKey: "i01")!)
                r.object(ofType: SyncItem.self, forPrimaryKey: "i19")!.title = "edited before its page"
            },
            { r in
                r.add(SyncItem("a-new", title: "before every page"))
                r.add(SyncItem("z-new", title: "after every page"))
                r.object(ofType: SyncItem.self, forPrimaryKey: "i02")!.tags.append("more")
            },
            { r in r.object(ofType: SyncItem.self, forPrimaryKey: "i03")!.count += 5 },
        ]
        var pages = 0
        var catchUps = 0
        let request = PullRequest(clientID: 0, after: 0, snapshotPage: 3)
        let first: PullResponse = try await setup.exchange("pull", token: token, request)
        let firstVersion = try #require(first.snapshot).version
        #expect(first.snapshot?.objects.count == 3)
        let assembled = try await SnapshotPages.complete(first, asking: request) { next in
            if pages < edits.count {
                try SyncServerTests.write(writer, edits[pages])
                try await setup.session(writer).wait(for: .upload)
            }
            pages += 1
            if next.snapshotSince != nil { catchUps += 1 }
            return try await setup.exchange("pull", token: token, next)
        }
        let whole: PullResponse = try await setup.exchange("pull", token: token, PullRequest(clientID: 0, after: 0))
        let paged = try #require(assembled.snapshot)
        let reference = try #require(whole.snapshot)
        #expect(paged.version == reference.version && paged.salt == reference.salt)
        #expect(paged.version > firstVersion)
        #expect(catchUps > 0, "the edits between pages needed a round of catch-up pages")
        #expect(paged.next == nil)
        #expect(paged.recent?.map(\.version) == reference.recent?.map(\.version))
        let pagedObjects = Dictionary(uniqueKeysWithValues: paged.objects.map { ($0.reference, $0.state) })
        let referenceObjects = Dictionary(uniqueKeysWithValues: reference.objects.map { ($0.reference, $0.state) })
        #expect(pagedObjects.count == 22)  // 20 + 2 created; the deleted one is a tombstone
        #expect(pagedObjects == referenceObjects)

        // A page naming a version the server has with another salt (as after a restore from a backup) says
        // `diverged`; with the right salt, it is given.
        var late = PullRequest(clientID: 0, after: 0, snapshotPage: 3)
        late.snapshotAfter = paged.objects.first?.reference
        (late.snapshotSeen, late.snapshotSeenSalt) = (paged.version, paged.salt ^ 1)
        let refused: PullResponse = try await setup.exchange("pull", token: token, late)
        #expect(refused.diverged == true && refused.snapshot == nil)
        late.snapshotSeenSalt = paged.salt
        let given: PullResponse = try await setup.exchange("pull", token: token, late)
        #expect(given.diverged != true && given.snapshot?.objects.count == 3)
        // A version newer than the server's (its newer history lost) says `diverged` too.
        late.snapshotSeen = paged.version + 1
        let ahead: PullResponse = try await setup.exchange("pull", token: token, late)
        #expect(ahead.diverged == true && ahead.snapshot == nil)
        // A seen version without its salt is refused.
        late.snapshotSeenSalt = nil
        let (status0, refusal0) = try await setup.post("v1/partitions/team/pull", body: try SyncWire.encoder.encode(late), token: token)
        #expect(status0 == 400 && refusal0?.message.contains("snapshotSeenSalt") == true)

        // A page of no objects, and a cursor without pages, are refused and change nothing.
        var empty = PullRequest(clientID: 0, after: 0, snapshotPage: 0)
        let (status, refusal) = try await setup.post("v1/partitions/team/pull", body: try SyncWire.encoder.encode(empty), token: token)
        #expect(status == 400 && refusal?.code == .malformed && refusal?.message.contains("snapshotPage") == true)
        empty.snapshotPage = nil
        empty.snapshotSince = 3
        let (status2, refusal2) = try await setup.post("v1/partitions/team/pull", body: try SyncWire.encoder.encode(empty), token: token)
        #expect(status2 == 400 && refusal2?.code == .malformed && refusal2?.message.contains("snapshotSince") == true)
        }
    }

    /// A walk whose server says `diverged` at a later page (restored from a backup since the pages before)
    /// starts over, and each page names the newest version read before it.
    @Test func aWalkStartsOverWhenTheServerLostWhatItsPagesWereReadFrom() async throws {
        func object(_ name: String, _ state: UInt8) -> WireSnapshot.Object {
            WireSnapshot.Object(reference: Data(name.utf8), state: Data([state]))
        }
        func answer(_ snapshot: WireSnapshot?, diverged: Bool? = nil) -> PullResponse {
            PullResponse(changes: [], serverVersion: snapshot?.version ?? 9, lastSequence: 0, snapshot: snapshot, diverged: diverged)
        }
        let request = PullRequest(clientID: 0, after: 0, waitMilliseconds: 25_000, snapshotPage: 1)
        let first = answer(WireSnapshot(version: 5, salt: 55, objects: [object("a", 1)], next: Data("a".utf8)))
        var asked: [PullRequest] = []
        let done = try await SnapshotPages.complete(first, asking: request) { next in
            asked.append(next)
            switch asked.count {
            case 1: return answer(nil, diverged: true)  // the page after "a": its server was restored
            case 2: return answer(WireSnapshot(version: 3, salt: 33, objects: [object("a", 2)], next: Data("a".utf8)))
            case 3: return answer(WireSnapshot(version: 4, salt: 44, objects: [object("b", 3)]))
            case 4: return answer(WireSnapshot(version: 4, salt: 44, objects: [object("b", 4)]))  // the catch-up round
            default: throw CancellationError()
            }
        }
        #expect(asked.count == 4)
        #expect(asked[0].snapshotAfter == Data("a".utf8) && asked[0].snapshotSeen == 5 && asked[0].snapshotSeenSalt == 55)
        // No page waits (a long poll); started over: no cursor, nothing seen.
        #expect(asked.allSatisfy { $0.waitMilliseconds == 0 })
        #expect(asked[1].snapshotAfter == nil && asked[1].snapshotSeen == nil && asked[1].snapshotSince == nil)
        #expect(asked[2].snapshotSeen == 3 && asked[2].snapshotSeenSalt == 33)
        #expect(asked[3].snapshotSince == 3 && asked[3].snapshotAfter == nil && asked[3].snapshotSeen == 4 && asked[3].snapshotSeenSalt == 44)
        let snapshot = try #require(done.snapshot)
        #expect(snapshot.version == 4 && snapshot.salt == 44 && snapshot.next == nil)
        #expect(snapshot.objects.map(\.reference) == [Data("a".utf8), Data("b".utf8)])
        #expect(snapshot.objects.map(\.state) == [Data([2]), Data([4])])
    }

    /// A new client's session downloads a partition in pages of four objects and holds what the writer holds.
    @Test func aNewClientsFirstDownloadComesInPages() async throws {
        try await Setup.with { setup in
        let token = try SyncServerProcess.token(write: ["team"])
        let writer = setup.config("writer.realm", token: token)
        try SyncServerTests.write(writer) { r in
            for i in 0..<25 {
                let item = SyncItem("item\(i)", title: "title \(i)")
                item.labels.insert("l\(i % 3)")
                r.add(item)
            }
        }
        try await setup.session(writer).wait(for: .upload)
        var reader = setup.config("reader.realm", token: token)
        reader.syncConfiguration?.snapshotPage = 4
        try await setup.session(reader).wait(for: .download)
        // 25 objects in pages of four: six pages after the first, then a catch-up round of one page. Walked once,
        // though the download loop and the wait both asked for it.
        #expect(try setup.session(reader).snapshotPagesAsked == 7)
        let items = try Realm(configuration: reader).objects(SyncItem.self).sorted(byKeyPath: "id")
        #expect(items.count == 25)
        #expect(items.map(\.title) == (0..<25).map { "title \($0)" }.sorted())
        #expect(items.allSatisfy { $0.labels.count == 1 })
        }
    }
}
