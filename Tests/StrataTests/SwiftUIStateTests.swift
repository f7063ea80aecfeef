import Dispatch
import Engine
import Foundation
import Strata
import Testing
import TestSupport

final class SUItem: Object {
    @Persisted(primaryKey: true) var id = 0
    @Persisted var name = ""
    @Persisted var done = false
}

/// The state types behind RealmSwift's SwiftUI wrappers (`@ObservedResults`, `@ObservedRealmObject`,
/// `@StateRealmObject`), which hold all of their logic and are tested here without SwiftUI.
@Suite struct SwiftUIStateTests {
    static func configuration(_ dir: TemporaryDirectory, _ name: String) -> Realm.Configuration {
        Realm.Configuration(fileURL: URL(fileURLWithPath: dir.child(name)), objectTypes: [SUItem.self])
    }

    static func fill(_ configuration: Realm.Configuration, _ names: [String]) throws {
        let realm = try Realm(configuration: configuration)
        try realm.write {
            for (i, name) in names.enumerated() { realm.create(SUItem.self, value: ["id": i + 1, "name": name]) }
        }
    }

    /// Commits `body` from another thread and waits for it.
    static func commitElsewhere(_ configuration: Realm.Configuration, _ body: @escaping @Sendable (Realm) -> Void) {
        let done = DispatchSemaphore(value: 0)
        Thread {
            defer { done.signal() }
            guard let realm = try? Realm(configuration: configuration) else { return }
            try? realm.write { body(realm) }
        }.start()
        done.wait()
    }

    @Test func theConfigurationIsTheWrappersThenTheEnvironmentsThenTheDefault() throws {
        let dir = try TemporaryDirectory()
        let a = Self.configuration(dir, "a.realm"), b = Self.configuration(dir, "b.realm")
        try Self.fill(a, ["in a"])
        try Self.fill(b, ["in b", "also in b"])
        #expect(RealmEnvironment().resolve(nil).fileURL == Realm.Configuration.defaultConfiguration.fileURL)
        #expect(RealmEnvironment(configuration: b).resolve(nil).fileURL == b.fileURL)
        #expect(RealmEnvironment(configuration: b).resolve(a).fileURL == a.fileURL)

        let fromEnvironment = ObservedResultsState(SUItem.self)
        fromEnvironment.update(environment: RealmEnvironment(configuration: b))
        #expect(fromEnvironment.results.map(\.name) == ["in b", "also in b"])
        let explicit = ObservedResultsState(SUItem.self, configuration: a)
        explicit.update(environment: RealmEnvironment(configuration: b))
        #expect(explicit.results.map(\.name) == ["in a"])
        // The environment changing gives the results of the new Realm. It is not announced: it happens while the
        // view updates, which reads the results next.
        var redraws = 0
        fromEnvironment.onChange = { redraws += 1 }
        fromEnvironment.update(environment: RealmEnvironment(configuration: a))
        #expect(redraws == 0 && fromEnvironment.results.map(\.name) == ["in a"])
    }

    @Test func resultsAreFilteredSortedAndSearched() throws {
        let dir = try TemporaryDirectory()
        let config = Self.configuration(dir, "f.realm")
        try Self.fill(config, ["pear", "apple", "Apricot", "banana"])
        let state = ObservedResultsState(SUItem.self, configuration: config, sortDescriptor: SortDescriptor(keyPath: "name"))
        #expect(state.results.map(\.name) == ["Apricot", "apple", "banana", "pear"])
        state.filter = ("id > %@", [1])
        #expect(state.results.map(\.name) == ["Apricot", "apple", "banana"])
        state.where = { $0.name.contains("an") }
        #expect(state.results.map(\.name) == ["banana"])
        state.filter = nil
        state.where = nil
        state.searchText("AP", on: \.name)
        #expect(state.results.map(\.name) == ["Apricot", "apple"])
        state.searchText("", on: \.name)
        state.sortDescriptor = SortDescriptor(keyPath: "name", ascending: false)
        #expect(state.results.map(\.name) == ["pear", "banana", "apple", "Apricot"])
        let byQuery = ObservedResultsState(SUItem.self, configuration: config, where: { $0.id <= 2 })
        #expect(byQuery.results.count == 2)
    }

    @Test func appendAndRemoveWriteAndAnotherThreadsCommitRedraws() throws {
        let dir = try TemporaryDirectory()
        let config = Self.configuration(dir, "w.realm")
        try Self.fill(config, ["one"])
        let state = ObservedResultsState(SUItem.self, configuration: config, sortDescriptor: SortDescriptor(keyPath: "id"))
        var redraws = 0
        state.onChange = { redraws += 1 }
        #expect(state.results.count == 1 && redraws == 0)
        let item = SUItem()
        item.id = 2
        item.name = "two"
        state.append(item)
        #expect(item.realm != nil && state.results.map(\.name) == ["one", "two"])
        #expect(redraws == 1)
        state.remove(atOffsets: IndexSet(integer: 0))
        #expect(state.results.map(\.name) == ["two"] && redraws == 2)
        state.remove(state.results[0].freeze())
        #expect(state.results.isEmpty && redraws == 3)
        // Another thread's commit redraws once the view's Realm refreshes (a main-thread Realm does by itself).
        Self.commitElsewhere(config) { $0.create(SUItem.self, value: ["id": 9, "name": "nine"]) }
        let realm = try Realm(configuration: config)
        realm.refresh()
        #expect(redraws == 4 && state.results.map(\.name) == ["nine"])
        // A commit that changes nothing observed does not.
        let narrow = ObservedResultsState(SUItem.self, configuration: config, keyPaths: ["done"])
        var narrowRedraws = 0
        narrow.onChange = { narrowRedraws += 1 }
        _ = narrow.results
        Self.commitElsewhere(config) { $0.object(ofType: SUItem.self, forPrimaryKey: 9)?.name = "IX" }
        realm.refresh()
        #expect(narrowRedraws == 0)
        Self.commitElsewhere(config) { $0.object(ofType: SUItem.self, forPrimaryKey: 9)?.done = true }
        realm.refresh()
        #expect(narrowRedraws == 1)
    }

    @Test func anObservedObjectsBindingsWriteInATransaction() throws {
        let dir = try TemporaryDirectory()
        let config = Self.configuration(dir, "o.realm")
        try Self.fill(config, ["draft"])
        let realm = try Realm(configuration: config)
        let item = try #require(realm.object(ofType: SUItem.self, forPrimaryKey: 1))
        let state = ObservedObjectState(item)
        var redraws = 0
        state.onChange = { redraws += 1 }
        state.set(\.name, "final")
        #expect(item.name == "final" && !realm.isInWriteTransaction && redraws == 1)
        state.set(\.name, "final")  // unchanged: nothing written
        #expect(redraws == 1)
        // A frozen object's binding writes its live version.
        let frozen = ObservedObjectState(item.freeze())
        frozen.set(\.done, true)
        #expect(item.done)
        // Another thread's change redraws after a refresh; deletion invalidates, and the view keeps a value.
        Self.commitElsewhere(config) { $0.object(ofType: SUItem.self, forPrimaryKey: 1)?.name = "elsewhere" }
        realm.refresh()
        #expect(redraws == 3 && state.value(\.name) == "elsewhere")
        state.delete()
        #expect(state.isInvalidated && redraws == 4)
        // A deleted object reads as it was at its last change (a view may draw once more), and writes nothing.
        #expect(state.value(\.name) == "elsewhere" && state.value(\.done))
        state.set(\.name, "ignored")
        #expect(redraws == 4)
        // An unmanaged object is written directly, and the view is told; once added, it is observed.
        let draft = SUItem()
        draft.id = 5
        let unmanaged = ObservedObjectState(draft)
        var draftRedraws = 0
        unmanaged.onChange = { draftRedraws += 1 }
        unmanaged.set(\.name, "new")
        #expect(draft.name == "new" && draftRedraws == 1)
        try realm.write { realm.add(draft) }
        unmanaged.set(\.name, "added")
        #expect(draft.name == "added" && draftRedraws == 2 && !realm.isInWriteTransaction)
        Self.commitElsewhere(config) { $0.object(ofType: SUItem.self, forPrimaryKey: 5)?.done = true }
        realm.refresh()
        #expect(draftRedraws == 3)
    }

    @Test func sectionedResultsFollowTheirQueryOrderAndWrites() throws {
        let dir = try TemporaryDirectory()
        let config = Self.configuration(dir, "s.realm")
        try Self.fill(config, ["pear", "apple", "plum", "avocado", "banana"])
        let state = ObservedSectionedResultsState(
            SUItem.self, sectionBlock: { String($0.name.prefix(1)) }, sortDescriptors: [SortDescriptor(keyPath: "name")], configuration: config)
        var redraws = 0
        state.onChange = { redraws += 1 }
        #expect(state.results.allKeys == ["a", "b", "p"])
        #expect(state.results[2].map(\.name) == ["pear", "plum"])
        #expect(state.results == state.results)  // the same sections until something changes
        #expect(state.base.searchText("a", on: \.name))
        #expect(!state.base.searchText("a", on: \.name))  // the same search changes nothing
        #expect(state.results.allKeys == ["a", "b", "p"] && state.results[2].map(\.name) == ["pear"])
        state.sortDescriptors = [SortDescriptor(keyPath: "name", ascending: false)]
        #expect(state.results.allKeys == ["p", "b", "a"])
        state.remove(at: IndexPath(indexes: [0, 0]))
        // A search is announced by its caller (SwiftUI.swift, after the view update); the order and the removal
        // by the state.
        #expect(state.results.allKeys == ["b", "a"] && redraws == 2)
        let byDone = ObservedSectionedResultsState(SUItem.self, sectionKeyPath: \.done, configuration: config)
        #expect(byDone.results.allKeys == [false] && byDone.results[0].count == 4)
    }
}
