import Foundation
import Strata
import Testing
import TestSupport

/// Issue 19: a `for` loop over a type's objects that reads an `Int` property allocates nothing per object (the
/// object of the previous step is reused, its record lent by the scan, the value decoded in place).
@Suite struct EnumerationAllocationTests {
    @Test func aLoopReadingAnIntOf100kObjectsAllocatesNothingPerObject() async {
        // In a child process: the count covers every thread, and other tests run alongside in this one.
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let dir = try TemporaryDirectory()
            let realm = try Realm(configuration: .init(fileURL: URL(fileURLWithPath: dir.child("a.realm")), objectTypes: [AllocPerson.self]))
            let n = 100_000
            try realm.write {
                for i in 0..<n { realm.create(AllocPerson.self, value: ["id": i, "name": "person \(i)", "age": i % 90]) }
            }
            var sum = 0
            for p in realm.objects(AllocPerson.self) { sum &+= p.age }  // warm: key paths, bindings
            var counted = 0
            let allocations = Allocations.count {
                for p in realm.objects(AllocPerson.self) {
                    counted += 1
                    sum &+= p.age
                }
            }
            guard counted == n else { fatalError("enumerated \(counted) of \(n)") }
            // A handful per scan (the iterator, the first object and its accessor), none per object. The count
            // covers the engine's maintenance thread too (a flush may run meanwhile): the bound leaves room for
            // it and still fails at one allocation per hundred objects.
            guard allocations < n / 100 else { fatalError("\(allocations) allocations for \(n) objects (sum \(sum))") }
            FileHandle.standardError.write(Data("allocations: \(allocations) for \(n) objects\n".utf8))
        }
        let report = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(report.contains("allocations: "), "\(report)")
    }
}
