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

/// What a decimal128 holds beyond Foundation's Decimal (issue 35: RealmSwift files hold them, and a conversion
/// must not narrow them): NaN with its sign and kind, the infinities, negative zero, exponents to +6111 and -6176.
@Suite struct Decimal128SpecialValueTests {
    static let texts = ["NaN", "-NaN", "sNaN", "Inf", "-Inf", "-0", "1E+6111", "-9999999999999999999999999999999999E+6111",
                        "1E-6176", "123456789012345678901234567890123E-20", "0.1", "-42", "1E+200"]

    @Test func specialValuesParsePrintAndCompareAsDecimal128Does() throws {
        let nan = try Decimal128(string: "NaN"), negativeZero = try Decimal128(string: "-0")
        let signaling = try Decimal128(string: "sNaN")
        #expect(nan.isNaN && !nan.isSignaling && signaling.isSignaling)
        #expect(!(nan < 1) && !(1 < nan) && nan == nan, "NaN is unordered, and equal to itself for sets")
        #expect(negativeZero == 0 && negativeZero.description == "-0" && negativeZero.isNegative)
        #expect(Set([negativeZero, Decimal128(integerLiteral: 0)]).count == 1)
        let ordered = try ["-Inf", "-1E+6111", "-42", "-0", "1E-6176", "0.1", "1E+200", "1E+6111", "Inf"].map(Decimal128.init(string:))
        #expect(ordered == ordered.sorted(), "\(ordered.sorted())")
        for (a, b) in zip(ordered, ordered.dropFirst()) { #expect(a < b || (a == b), "\(a) < \(b)") }
        let widest = try Decimal128(string: "+1000000000000000000000000000000000E+6111")
        #expect(widest.description == "1000000000000000000000000000000000E+6111")
        #expect(throws: Realm.Error.self) { try Decimal128(string: "1E+7000") }
        #expect(throws: Realm.Error.self) { try Decimal128(string: "12345678901234567890123456789012345678901E+500") }
        for text in Self.texts {
            let d = try Decimal128(string: text)
            let again = try Decimal128(string: d.description)
            #expect(again.description == d.description, "\(text)")
            let coded = try JSONDecoder().decode(Decimal128.self, from: JSONEncoder().encode(d))
            #expect(coded.description == d.description, "\(text) through Codable")
        }
    }

    @Test func specialValuesAreStoredAndQueried() throws {
        let dir = try TemporaryDirectory()
        let config = Realm.Configuration(fileURL: URL(fileURLWithPath: dir.child("d.realm")), objectTypes: [LPrice.self])
        do {
            let realm = try Realm(configuration: config)
            try realm.write {
                for (i, text) in Self.texts.enumerated() {
                    realm.create(LPrice.self, value: ["id": i, "amount": try Decimal128(string: text), "discount": try Decimal128(string: text)] as [String: Any])
                }
            }
        }
        let realm = try Realm(configuration: config)
        for (i, text) in Self.texts.enumerated() {
            let p = try #require(realm.object(ofType: LPrice.self, forPrimaryKey: i))
            let expected = try Decimal128(string: text)
            #expect(p.amount.description == expected.description && p.discount?.description == expected.description, "\(text)")
        }
        let big = try Decimal128(string: "1E+100"), small = try Decimal128(string: "-1E+100")
        #expect(Set(realm.objects(LPrice.self).filter("amount > %@", big).map(\.id)) == [6, 12, 3])
        #expect(realm.objects(LPrice.self).filter("amount < %@", small).map(\.id).sorted() == [4, 7])
    }
}

/// RealmSwift's spellings of Decimal128 values compile and mean what they mean there.
@Suite struct Decimal128SpellingTests {
    @Test func realmSwiftsInitializersLiteralsAndArithmetic() throws {
        let literal: Decimal128 = "12.5"
        #expect(literal == (try Decimal128(string: "12.5")))
        #expect(Decimal128() == 0)
        #expect(Decimal128(value: 3) == 3 && Decimal128(value: "0.25") == "0.25" && Decimal128(value: Decimal(7)) == 7)
        #expect(Decimal128(value: [1]).isNaN, "RealmSwift: a value it cannot read is NaN")
        #expect(("not a number" as Decimal128).isNaN)
        #expect(Decimal128.min < -1 && Decimal128.max > 1 && Decimal128.min.description == "-9999999999999999999999999999999999E+6111")
        #expect((literal + 1) == "13.5" && (literal - 0.5) == 12 && (literal * 2) == 25 && (literal / 5) == "2.5")
        var total: Decimal128 = 0
        total += literal
        #expect(total == literal && (-literal).magnitude == literal)
        #expect(("NaN" as Decimal128) + 1 != 1)
    }

    @Test func typeSafeQueriesCompareDecimals() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: .init(fileURL: URL(fileURLWithPath: dir.child("d.realm")), objectTypes: [LPrice.self]))
        try realm.write {
            for (i, text) in ["0.5", "12", "1E+200", "-Inf"].enumerated() {
                realm.create(LPrice.self, value: ["id": i, "amount": Decimal128(stringLiteral: text)] as [String: Any])
            }
        }
        #expect(realm.objects(LPrice.self).where { $0.amount > 1 }.map(\.id).sorted() == [1, 2])
        #expect(realm.objects(LPrice.self).where { $0.amount < 0 }.map(\.id) == [3])
    }
}

/// Issue 56, item 7: Decimal128's numeric API as RealmSwift's (`Numeric`, `Strideable`, `negate()`,
/// `isSignalingNaN`).
@Suite struct Decimal128NumericTests {
    @Test func itIsNumericAndStrideable() throws {
        #expect(Decimal128(exactly: 42) == 42)
        #expect(Decimal128(exactly: Int64.min) == (try Decimal128(string: "-9223372036854775808")))
        #expect(Decimal128(exactly: UInt64.max) == (try Decimal128(string: "18446744073709551615")))
        let one: Decimal128 = 1
        #expect(one.advanced(by: "0.5") == "1.5")
        #expect(one.distance(to: 4) == 3)
        #expect(Array(stride(from: Decimal128(0), to: 1, by: "0.25")) == [0, "0.25", "0.5", "0.75"])
        var x: Decimal128 = "2.5"
        x.negate()
        #expect(x == "-2.5")
        #expect(!Decimal128(value: Decimal.nan).isSignalingNaN)
        #expect(Decimal128.zero == 0)
        /// Generic numeric code takes it.
        func total<N: Numeric>(_ xs: [N]) -> N { xs.reduce(0, +) }
        #expect(total(["0.1", "0.2"] as [Decimal128]) == "0.3")
    }
}
