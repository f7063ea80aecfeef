import Engine
import Foundation
import Strata
import Atomics
import Testing
import TestSupport

final class Account: Object {
    @Persisted(primaryKey: true) var id: Int
    @Persisted var balance = 0
}

/// Readers on their own threads hold their own Realm instances while a writer commits: each reader's view never
/// changes until it refreshes, and every view is a consistent version (transfers keep the total constant).
/// Run under the thread sanitizer with `swift test --sanitize=thread --filter ConcurrencyTests`.
@Suite struct ConcurrencyTests {
    static let accounts = 50
    static let total = accounts * 100

    @Test(arguments: Seeds.environmentOr([61]))
    func readersSeeStableConsistentSnapshotsWhileAWriterCommits(seed: UInt64) throws {
        let dir = try TemporaryDirectory()
        let config = Realm.Configuration(fileURL: URL(fileURLWithPath: dir.child("bank.realm")), objectTypes: [Account.self])
        do {
            let realm = try Realm(configuration: config)
            try realm.write {
                for i in 0..<Self.accounts { realm.create(Account.self, value: ["id": i, "balance": 100]) }
            }
        }
        let stop = ManagedAtomic<Bool>(false)
        let problems = Locked<[String]>([])
        let refreshes = ManagedAtomic<Int>(0)
        let commits = ManagedAtomic<Int>(0)
        let group = DispatchGroup()
        for r in 0..<3 {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                do {
                    let realm = try Realm(configuration: config)
                    var rng = SplitMix64(seed: seed &+ UInt64(r))
                    while !stop.load(ordering: .relaxed) {
                        let view = realm.objects(Account.self).sorted(byKeyPath: "id").map(\.balance)
                        // The same Realm, read again without refreshing, shows exactly the same version.
                        for _ in 0..<Int(rng.next() % 3) {
                            let again = realm.objects(Account.self).sorted(byKeyPath: "id").map(\.balance)
                            if again != view { problems.withLock { $0.append("reader \(r): the view changed without a refresh") } }
                        }
                        let sum = view.reduce(0, +)
                        if sum != Self.total { problems.withLock { $0.append("reader \(r): a view sums to \(sum), not \(Self.total)") } }
                        if realm.refresh() { refreshes.wrappingIncrement(by: 1, ordering: .relaxed) }
                    }
                } catch {
                    problems.withLock { $0.append("reader \(r): \(error)") }
                }
            }
        }
        let writer = try Realm(configuration: config)
        var rng = SplitMix64(seed: seed)
        for _ in 0..<(150 * Seeds.scale) {
            try writer.write {
                let from = Int(rng.next() % UInt64(Self.accounts))
                let to = Int(rng.next() % UInt64(Self.accounts))
                let amount = Int(rng.next() % 20)
                let a = writer.object(ofType: Account.self, forPrimaryKey: from)!
                let b = writer.object(ofType: Account.self, forPrimaryKey: to)!
                a.balance -= amount
                b.balance += amount
            }
            commits.wrappingIncrement(by: 1, ordering: .relaxed)
        }
        stop.store(true, ordering: .relaxed)
        #expect(group.wait(timeout: .now() + 60) == .success)
        #expect(problems.withLock { $0 }.isEmpty, "\(problems.withLock { Array($0.prefix(3)) })")
        #expect(refreshes.load(ordering: .relaxed) > 0, "no reader ever moved to a newer version")
        #expect(writer.objects(Account.self).sum(ofProperty: "balance") as Int == Self.total)
    }
}
