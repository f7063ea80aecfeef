import Engine
import Foundation
@testable import Strata
import Testing
import TestSupport

/// A node of a singly linked chain, for the stack-depth test.
final class ChainNode: Object {
    @Persisted var index = 0
    @Persisted var next: ChainNode?
}

/// A node of a chain with a primary key, for adds that meet one key twice.
final class KeyedChainNode: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var label = ""
    @Persisted var next: KeyedChainNode?
    @Persisted var others: List<KeyedChainNode>
}

/// Values as JSONSerialization and property lists hand them over.
final class JSONTask: Object {
    @Persisted var title = ""
    @Persisted var done = false
    @Persisted var count = 0
    @Persisted var ratio = 0.0
}

/// What differs between platforms and is decided in shared code (issue 34): where the default file goes, one
/// file under two spellings, deep object graphs on small stacks, Foundation's numbers, the memory budget.
@Suite struct PlatformTests {
    static let inputs = DefaultLocation.Inputs(
        platform: .other, documents: "/app/Documents", caches: "/app/Library/Caches",
        applicationSupport: "/Users/ada/Library/Application Support", isSandboxed: false,
        bundleIdentifier: "com.example.notes", executableName: "Notes", currentDirectory: "/work")

    @Test func theDefaultFileGoesWhereRealmSwiftPutsItOnEachPlatform() {
        func directory(_ platform: DefaultLocation.Platform, _ change: (inout DefaultLocation.Inputs) -> Void = { _ in }) -> String {
            var i = Self.inputs
            i.platform = platform
            change(&i)
            return DefaultLocation.directory(for: i).path
        }
        #expect(directory(.iOS) == "/app/Documents")
        #expect(directory(.tvOS) == "/app/Library/Caches")
        // macOS outside the sandbox: a folder per app, named by its bundle identifier, else its executable.
        #expect(directory(.macOS) == "/Users/ada/Library/Application Support/com.example.notes")
        #expect(DefaultLocation.directory(for: { var i = Self.inputs; i.platform = .macOS; return i }()).create)
        #expect(directory(.macOS) { $0.bundleIdentifier = nil } == "/Users/ada/Library/Application Support/Notes")
        // In the sandbox, Application Support is the app's own already.
        #expect(directory(.macOS) { $0.isSandboxed = true } == "/Users/ada/Library/Application Support")
        #expect(directory(.other) == "/work")
        // This platform (Linux here): the working directory, as documented.
        #if os(Linux)
        #expect(Realm.Configuration.defaultFileURL.path == FileManager.default.currentDirectoryPath + "/default.realm")
        #endif
    }

    @Test func oneDirectoryReachedThroughASymbolicLinkIsOneOpenRealm() throws {
        let dir = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: dir.child("real"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: dir.child("link"), withDestinationPath: dir.child("real"))
        let real = URL(fileURLWithPath: dir.child("real/notes.realm"))
        let linked = URL(fileURLWithPath: dir.child("link/notes.realm"))
        let a = try Realm(configuration: .init(fileURL: real, objectTypes: [JSONTask.self]))
        // Without resolving the link this second open was another opener of the same files: `.alreadyOpen`.
        let b = try Realm(configuration: .init(fileURL: linked, objectTypes: [JSONTask.self]))
        try a.write { a.add(JSONTask(value: ["title": "through the real path"])) }
        b.refresh()
        #expect(b.objects(JSONTask.self).map(\.title) == ["through the real path"])
        #expect(a.configuration.identity == b.configuration.identity)
        // A spelling with `.` and `..` in it is the same file too.
        let dotted = URL(fileURLWithPath: dir.child("link/../real/./notes.realm"))
        #expect(Realm.Configuration(fileURL: dotted).identity == a.configuration.identity)
    }

    /// A long chain of unmanaged objects added on a thread with Darwin's secondary-thread stack (512 KiB):
    /// adding it recursed once per link, which overflowed such a stack at a few thousand links.
    @Test func aLongLinkedChainIsAddedOnA512KiBStack() throws {
        let dir = try TemporaryDirectory()
        let config = Realm.Configuration(fileURL: URL(fileURLWithPath: dir.child("chain.realm")), objectTypes: [ChainNode.self])
        let length = 20_000
        let outcome = Locked<String?>(nil)
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            defer { done.signal() }
            do {
                let realm = try Realm(configuration: config)
                let head = ChainNode()
                var tail = head
                for i in 1..<length {
                    let node = ChainNode()
                    node.index = i
                    tail.next = node
                    tail = node
                }
                try realm.write { realm.add(head) }
                var count = 0
                var node: ChainNode? = realm.objects(ChainNode.self).where { $0.index == 0 }.first
                while let n = node {
                    #expect(n.index == count)
                    count += 1
                    node = n.next
                }
                outcome.withLock { $0 = "walked \(count)" }
            } catch {
                outcome.withLock { $0 = "\(error)" }
            }
        }
        thread.stackSize = 512 * 1024
        thread.start()
        done.wait()
        #expect(outcome.withLock { $0 } == "walked \(length)")
    }

    /// JSONSerialization hands booleans over as NSNumber, which on Darwin also casts to Int: `true` stays a
    /// Bool, numbers take the property's type, and 0/1 given for a Bool are booleans (as RealmSwift takes them).
    @Test func foundationNumbersKeepTheirKind() throws {
        let json = #"[{"title": "a", "done": true, "count": 3, "ratio": 0.5}, {"title": "b", "done": false, "count": 4, "ratio": 2}, {"title": "c", "done": 1, "count": 5.0, "ratio": 1}]"#
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]])
        let realm = try Realm(configuration: .init(inMemoryIdentifier: "json-numbers", objectTypes: [JSONTask.self]))
        try realm.write { for row in rows { realm.create(JSONTask.self, value: row) } }
        let tasks = realm.objects(JSONTask.self).sorted(byKeyPath: "title")
        #expect(tasks.map(\.done) == [true, false, true])
        #expect(tasks.map(\.count) == [3, 4, 5])
        #expect(tasks.map(\.ratio) == [0.5, 2, 1])
        // Without a property type (an AnyRealmValue, a query argument) a boolean is a boolean, 3 an integer.
        #expect(StoredValue.from(any: rows[0]["done"]) == .bool(true))
        #expect(StoredValue.from(any: rows[0]["count"]) == .int(3))
        #expect(StoredValue.from(any: rows[0]["ratio"]) == .double(0.5))
        // A boolean given for an integer property is 0 or 1: RealmSwift receives it as an NSNumber, which an
        // int property takes (issue 56, item 3).
        #expect(StoredValue.from(any: NSNumber(value: true), as: .int) == .int(1))
        // Nothing is rounded or guessed: 3.5 for an Int and 2 for a Bool stay what they are (and the property
        // check reports the mismatch); 4.0 for an Int is 4.
        #expect(StoredValue.from(any: NSNumber(value: 3.5), as: .int) == .double(3.5))
        #expect(StoredValue.from(any: NSNumber(value: 4.0), as: .int) == .int(4))
        #expect(StoredValue.from(any: NSNumber(value: 2), as: .bool) == .int(2))
        #expect(StoredValue.from(any: NSNumber(value: 1), as: .bool) == .bool(true))
        // An NSDecimalNumber keeps its digits for a Decimal128; a Float number stays a Float without a type.
        #expect(StoredValue.from(any: NSDecimalNumber(string: "0.1000000000000000000000000000001"), as: .decimal128)
            == .decimal(Decimal128(value: Decimal(string: "0.1000000000000000000000000000001")!)))
        #expect(StoredValue.from(any: NSNumber(value: Float(1.5))) == .float(1.5))
    }

    @Test func theMemoryBudgetReachesTheEngine() throws {
        #if os(Linux)
        #expect(Realm.Configuration.MemoryBudget() == .init(blockCacheBytes: 256 << 20, memtableBytes: 64 << 20))
        #endif
        let dir = try TemporaryDirectory()
        var config = Realm.Configuration(fileURL: URL(fileURLWithPath: dir.child("small.realm")), objectTypes: [JSONTask.self])
        config.memoryBudget = .init(blockCacheBytes: 1 << 20, memtableBytes: 2 << 20)
        let realm = try Realm(configuration: config)
        #expect(realm.core.database.options.blockCacheBytes == 1 << 20)
        #expect(realm.core.database.options.memtableFlushBytes == 2 << 20)
    }

    /// A mapping refused for lack of address space (what iOS answers a large file) is RealmSwift's
    /// `addressSpaceExhausted`, with what to do next, not a generic file error.
    @Test func noAddressSpaceAtOpenIsAddressSpaceExhausted() throws {
        let dir = try TemporaryDirectory()
        let url = URL(fileURLWithPath: dir.child("big.realm"))
        do {
            let realm = try Realm(configuration: .init(fileURL: url, objectTypes: [JSONTask.self]))
            try realm.write { realm.add(JSONTask(value: ["title": "mapped"])) }
        }
        var config = Realm.Configuration(fileURL: url, objectTypes: [JSONTask.self])
        config.fileSystem = FaultyFileSystem(base: PosixFileSystem(), faults: [.failMap(errno: ENOMEM)])
        #expect {
            _ = try Realm(configuration: config)
        } throws: { error in
            guard let e = error as? Realm.Error else { return false }
            return e.code == .addressSpaceExhausted && "\(e)".contains("mmap() failed")
        }
    }

    /// A chain deeper than the adds that nest (its tail's link resolutions are queued) meets one primary key
    /// twice, deep in a chain of lists and in a shallow node's link: with `.modified` the record gets the
    /// values and the links of one instance, never the values of one and the links of the other. (Queued
    /// resolutions look their record up when they run: one could otherwise write into a copy that an earlier
    /// one had encoded. This arrangement does not reach that interleaving; the property checked holds for it.)
    @Test func aDeepChainMeetingOneKeyTwiceKeepsOneInstanceWhole() throws {
        let realm = try Realm(configuration: .init(inMemoryIdentifier: "deep-keyed-chain", objectTypes: [KeyedChainNode.self]))
        let nodes = (0..<41).map { position in
            KeyedChainNode(value: ["id": position == 35 ? 100 : position, "label": "position \(position)"])
        }
        for (node, next) in zip(nodes, nodes.dropFirst()) { node.others.append(next) }
        let other = KeyedChainNode(value: ["id": 100, "label": "linked"])
        other.next = KeyedChainNode(value: ["id": 500, "label": "after it"])
        nodes[2].next = other
        try realm.write { realm.add(nodes[0], update: .modified) }
        let twice = try #require(realm.object(ofType: KeyedChainNode.self, forPrimaryKey: 100))
        let whole = (twice.label == "position 35" && twice.next == nil && twice.others.first?.id == 36)
            || (twice.label == "linked" && twice.next?.id == 500 && twice.others.isEmpty)
        #expect(whole, "label \(twice.label), next \(twice.next?.id ?? -1), others \(twice.others.map(\.id))")
        #expect(realm.objects(KeyedChainNode.self).count == 42)  // 40 positions, key 100, key 500
    }
}
