import Foundation
import Strata
import Testing
import TestSupport

@Suite struct Decimal128Tests {
    @Test func decimalsRoundTripExactlyAndCompareInQueries() throws {
        let dir = try TemporaryDirectory()
        let config = Realm.Configuration(fileURL: URL(fileURLWithPath: dir.child("d.realm")), objectTypes: [LPrice.self])
        do {
            let realm = try Realm(configuration: config)
            try realm.write {
                realm.create(LPrice.self, value: ["id": 1, "amount": try Decimal128(string: "0.1")] as [String: Any])
                realm.create(LPrice.self, value: ["id": 2, "amount": 12, "discount": "1.25"] as [String: Any])
                let p = LPrice()
                p.id = 3
                p.amount = try Decimal128(string: "123456789012345678901234567890.123")
                realm.add(p)
            }
        }
        let realm = try Realm(configuration: config)
        #expect(realm.object(ofType: LPrice.self, forPrimaryKey: 1)?.amount == (try Decimal128(string: "0.1")))
        #expect(realm.object(ofType: LPrice.self, forPrimaryKey: 2)?.discount == (try Decimal128(string: "1.25")))
        #expect(realm.object(ofType: LPrice.self, forPrimaryKey: 3)?.amount.description == "123456789012345678901234567890.123")
        #expect(realm.objects(LPrice.self).filter("amount > 10").map(\.id) == [2, 3])
        #expect(realm.objects(LPrice.self).sorted(byKeyPath: "amount", ascending: false).map(\.id) == [3, 2, 1])
        #expect(realm.objects(LPrice.self).filter("discount == nil").count == 2)
        #expect(throws: Realm.Error.self) { try Decimal128(string: "twelve") }
    }
}
