import Foundation
import Strata
import Testing
import TestSupport

/// The README's actor example: a Realm that belongs to an actor.
actor PersonStore {
    private var realm: Realm?
    private var token: NotificationToken?

    func open(_ configuration: Realm.Configuration) async throws {
        realm = try await Realm(configuration: configuration, actor: self)
    }

    func add(id: Int, age: Int) async throws {
        guard let realm else { return }
        try await realm.asyncWrite {
            realm.create(Person.self, value: ["id": id, "age": age])
        }
    }

    func count() -> Int { realm?.objects(Person.self).count ?? 0 }

    /// Reports each change set's insertion count on `updates`, from the actor.
    func watch(_ updates: AsyncStream<Int>.Continuation) {
        token = realm?.objects(Person.self).observe { [self] change in
            // Delivered on this actor (traps otherwise).
            self.assertIsolated("a notification of the actor's Realm ran off the actor")
            if case .update(_, _, let insertions, _) = change { updates.yield(insertions.count) }
        }
    }

    func stop() {
        token?.invalidate()
        token = nil
    }
}

@Suite struct ActorTests {
    @Test func aRealmOfAnActorSeesOtherThreadsCommitsThroughItsNotifications() async throws {
        let dir = try TemporaryDirectory()
        let config = Realm.Configuration(fileURL: URL(fileURLWithPath: dir.child("actor.realm")), objectTypes: [Person.self])
        let store = PersonStore()
        try await store.open(config)
        try await store.add(id: 1, age: 30)
        #expect(await store.count() == 1)
        let (updates, continuation) = AsyncStream.makeStream(of: Int.self)
        await store.watch(continuation)
        // Another thread writes through its own Realm: the actor's Realm refreshes and notifies on the actor.
        let writer = Thread {
            let realm = try? Realm(configuration: config)
            try? realm?.write {
                realm?.create(Person.self, value: ["id": 2, "age": 40])
                realm?.create(Person.self, value: ["id": 3, "age": 50])
            }
        }
        writer.start()
        // A deadline: the stream ends after 10 s if no update came.
        let deadline = Task {
            try? await Task.sleep(nanoseconds: 10_000_000_000)
            continuation.finish()
        }
        var first: Int? = nil
        for await inserted in updates {
            first = inserted
            break
        }
        deadline.cancel()
        #expect(first == 2, "the actor's observer saw no update within 10 s")
        #expect(await store.count() == 3)
        await store.stop()
    }

    @Test func openFromAsyncCodeAndAsyncOpenOnAQueue() async throws {
        let dir = try TemporaryDirectory()
        let config = Realm.Configuration(fileURL: URL(fileURLWithPath: dir.child("open.realm")), objectTypes: [Person.self])
        let realm = try await Realm.open(configuration: config)
        try await realm.asyncWrite { realm.create(Person.self, value: ["id": 7]) }
        #expect(realm.objects(Person.self).count == 1)
        let queue = DispatchQueue(label: "open")
        let count: Int = try await withCheckedThrowingContinuation { done in
            Realm.asyncOpen(configuration: config, callbackQueue: queue) { result in
                done.resume(with: result.map { $0.objects(Person.self).count })
            }
        }
        #expect(count == 1)
    }
}
