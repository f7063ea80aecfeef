import Foundation
import RealmFile
import RealmFileTesting
@testable import Strata
import Testing
import TestSupport

final class DatedThing: Object {
    @Persisted(primaryKey: true) var id: Int
    @Persisted var when = Date(timeIntervalSinceReferenceDate: 0)
    @Persisted var maybe: Date?
    @Persisted var dates: List<Date>
    @Persisted var distinct: MutableSet<Date>
    @Persisted var byName: Map<String, Date?>
    @Persisted var any: AnyRealmValue
}

enum ConvertedDates {
    final class Stamp: Object {
        @Persisted var n = 0
        @Persisted var when = Date(timeIntervalSinceReferenceDate: 0)
        override class func className() -> String { "Stamp" }
    }
}

/// A `Date` read back is the `Date` written, bit for bit: the record keeps the Date's own Double (seconds since
/// 2001). Earlier releases stored seconds since 1970, and the sum rounded half of today's dates by one unit in
/// the last place, so that `object.when == dateWritten` was false after a commit.
@Suite struct ExactDateTests {
    static func configuration(_ path: String) -> Realm.Configuration {
        Realm.Configuration(fileURL: URL(fileURLWithPath: path), objectTypes: [DatedThing.self])
    }

    /// Dates of every era with every fraction: today's to the last bit, the far past and future, the extremes.
    static func dates(seed: UInt64, count: Int) -> [Date] {
        var rng = SplitMix64(seed: seed)
        var out: [Date] = [.distantPast, .distantFuture, Date(timeIntervalSinceReferenceDate: 0), Date(timeIntervalSinceReferenceDate: -0.0)]
        // A date of 2026 that seconds since 1970 cannot hold (its last bit is set).
        out.append(Date(timeIntervalSinceReferenceDate: Double(bitPattern: Double(818_000_000).bitPattern | 1)))
        for i in 0..<count {
            let seconds: Double
            switch i % 4 {
            case 0: seconds = Double(rng.next() % 1_000_000_000) + Double(rng.next() % 1_000_000_000) / 1e9
            case 1: seconds = -Double(rng.next() % 4_000_000_000) - Double(rng.next() % 1_000) / 1e3
            case 2: seconds = Double(bitPattern: 0x41C0_0000_0000_0000 | rng.next() % (1 << 52))  // about 2001 + 17 to 34 years
            default: seconds = Double(Int64(bitPattern: rng.next()) % 10_000_000_000_000) / 997
            }
            out.append(Date(timeIntervalSinceReferenceDate: seconds))
        }
        return out
    }

    static func sameBits(_ a: Date?, _ b: Date?) -> Bool {
        a?.timeIntervalSinceReferenceDate.bitPattern == b?.timeIntervalSinceReferenceDate.bitPattern
    }

    @Test(arguments: Seeds.environmentOr([41]))
    func everyDateReadsBackBitForBitInEveryKindOfProperty(seed: UInt64) throws {
        let dir = try TemporaryDirectory()
        let path = dir.child("db")
        let dates = Self.dates(seed: seed, count: 200 * Seeds.scale)
        // The old storage's rounding, to be sure the dates try it: about half of today's would change.
        let rounded = dates.filter { Date(timeIntervalSince1970: $0.timeIntervalSince1970) != $0 }.count
        #expect(rounded > dates.count / 8, "\(rounded) of \(dates.count)")
        do {
            let realm = try Realm(configuration: Self.configuration(path))
            try realm.write {
                for (i, d) in dates.enumerated() {
                    let t = DatedThing()
                    t.id = i
                    t.when = d
                    t.maybe = i % 3 == 0 ? nil : d
                    t.dates.append(objectsIn: [d, dates[(i + 1) % dates.count]])
                    t.distinct.insert(d)
                    t.byName["d"] = d
                    t.byName["none"] = .some(nil)
                    t.any = .date(d)
                    realm.add(t)
                }
            }
        }
        let realm = try Realm(configuration: Self.configuration(path))
        for (i, d) in dates.enumerated() {
            let t = try #require(realm.object(ofType: DatedThing.self, forPrimaryKey: i))
            #expect(Self.sameBits(t.when, d), "\(i): \(d.timeIntervalSinceReferenceDate) read as \(t.when.timeIntervalSinceReferenceDate)")
            #expect(Self.sameBits(t.maybe, i % 3 == 0 ? nil : d), "\(i)")
            #expect(Self.sameBits(t.dates[0], d) && Self.sameBits(t.dates[1], dates[(i + 1) % dates.count]), "\(i)")
            #expect(t.distinct.contains(d) && Self.sameBits(t.distinct.first, d), "\(i)")
            #expect(Self.sameBits(t.byName["d"] ?? nil, d), "\(i)")
            #expect(Self.sameBits(t.any.dateValue, d), "\(i)")
        }
    }

    @Test func aDateSetOnAnExistingObjectAndQueriedIsTheOneWritten() throws {
        let dir = try TemporaryDirectory()
        let realm = try Realm(configuration: Self.configuration(dir.child("db")))
        let dates = Self.dates(seed: 7, count: 60).filter { Date(timeIntervalSince1970: $0.timeIntervalSince1970) != $0 }
        try #require(dates.count > 10)
        try realm.write {
            for i in dates.indices { realm.add(DatedThing(value: ["id": i])) }
        }
        // Set in place (a slot patched in the stored record), then found by equality and in order.
        try realm.write {
            for (i, d) in dates.enumerated() { realm.object(ofType: DatedThing.self, forPrimaryKey: i)!.when = d }
        }
        for (i, d) in dates.enumerated() {
            let found = realm.objects(DatedThing.self).where { $0.when == d }
            #expect(found.count == 1 && found.first?.id == i, "\(i)")
            #expect(realm.objects(DatedThing.self).filter("when == %@", d).first?.id == i, "\(i)")
        }
        let sorted = realm.objects(DatedThing.self).sorted(byKeyPath: "when").map(\.when)
        #expect(Array(sorted) == dates.sorted())
        #expect(Self.sameBits(realm.objects(DatedThing.self).max(ofProperty: "when"), dates.max()))
    }

    /// A record of format 2 (an earlier release's: dates as seconds since 1970) reads as that release read it,
    /// and the format-3 record the upgrade writes holds the same Date.
    @Test func aFormat2RecordReadsAsBeforeAndKeepsItsDateWhenRewritten() throws {
        let layout = RecordLayout([
            .init(fieldId: 1, name: "when", type: .date, isOptional: false, isPrimaryKey: false, isIndexed: false, objectClassName: nil)
        ])
        let since1970 = 1_795_000_000.123_456_7
        var legacy = ObjectRecord.encode(schemaVersion: 0, fields: [(1, .date(Date(timeIntervalSince1970: 0)))], layout: layout)
        #expect(legacy.first == RecordLayout.format)
        legacy[0] = RecordLayout.legacyFormat
        let slot = legacy.count - 8
        legacy.replaceSubrange(slot..<slot + 8, with: withUnsafeBytes(of: since1970.bitPattern.littleEndian, Array.init))
        let decoded = try legacy.withUnsafeBytes { try ObjectRecord.decodeAll($0, layouts: RecordLayouts([0: layout])) }
        let expected = Date(timeIntervalSince1970: since1970)
        #expect(decoded.fields[1] == .date(expected))
        let again = ObjectRecord.encode(schemaVersion: 0, fields: decoded.fields.map { ($0.id, $0.value) }, layout: layout)
        #expect(again.first == RecordLayout.format)
        let reread = try again.withUnsafeBytes { try ObjectRecord.decodeAll($0, layouts: RecordLayouts([0: layout])) }
        guard case .date(let d)? = reread.fields[1] else {
            Issue.record("no date in \(reread.fields)")
            return
        }
        #expect(Self.sameBits(d, expected))
    }

    /// RealmSwift's `RLMTimestampForNSDate`: how a RealmSwift app wrote a Date into its file.
    static func realmTimestamp(_ date: Date) -> RealmFileTimestamp {
        let interval = date.timeIntervalSinceReferenceDate
        var seconds = Int64(interval)
        var nanoseconds = Int32((interval - Double(seconds)) * 1_000_000_000)
        seconds += 978_307_200
        // Negative if and only if in the past.
        if seconds > 0 && nanoseconds < 0 {
            seconds -= 1
            nanoseconds += 1_000_000_000
        } else if seconds < 0 && nanoseconds > 0 {
            seconds += 1
            nanoseconds -= 1_000_000_000
        }
        return RealmFileTimestamp(seconds: seconds, nanoseconds: nanoseconds)
    }

    /// RealmSwift's `RLMTimestampToNSDate`: the Date a RealmSwift app read from its file.
    static func realmDate(_ t: RealmFileTimestamp) -> Date {
        Date(timeIntervalSinceReferenceDate: Double(t.seconds) - 978_307_200.0 + Double(t.nanoseconds) / 1_000_000_000.0)
    }

    /// A RealmSwift file's dates, converted: each is the Date RealmSwift read from it, bit for bit (and, for the
    /// dates an app writes today, the Date it wrote), for timestamps of every nanosecond a file can hold.
    @Test(arguments: Seeds.environmentOr([35]))
    func aConvertedRealmFilesDatesAreTheOnesRealmSwiftRead(seed: UInt64) throws {
        var rng = SplitMix64(seed: seed)
        let dates = Self.dates(seed: seed, count: 300 * Seeds.scale).filter { abs($0.timeIntervalSinceReferenceDate) < 1e15 }
        var stamps = dates.map(Self.realmTimestamp)
        // Timestamps no Date wrote (another SDK's, or a server's): any nanosecond.
        for _ in 0..<100 {
            let negative = rng.next() & 1 == 0
            let seconds = Int64(rng.next() % 4_000_000_000) * (negative ? -1 : 1)
            let nanoseconds = Int32(rng.next() % 1_000_000_000) * (negative ? -1 : 1)
            stamps.append(RealmFileTimestamp(seconds: seconds, nanoseconds: nanoseconds))
        }
        var writer = RealmFileWriter()
        writer.schemaVersion = 0
        let bytes = writer.write([RealmFileWriter.Table(
            name: "Stamp", properties: [.init("n", .int), .init("when", .date)],
            objects: stamps.enumerated().map { (Int64($0.offset), [.int(Int64($0.offset)), .timestamp($0.element)]) })])
        let dir = try TemporaryDirectory()
        let url = URL(fileURLWithPath: dir.child("default.realm"))
        try Data(bytes).write(to: url)
        let realm = try Realm(configuration: .init(fileURL: url, objectTypes: [ConvertedDates.Stamp.self]))
        let converted = realm.objects(ConvertedDates.Stamp.self)
        #expect(converted.count == stamps.count)
        var sameAsWritten = 0
        for stamp in converted {
            let expected = Self.realmDate(stamps[stamp.n])
            #expect(Self.sameBits(stamp.when, expected), "\(stamps[stamp.n]): \(stamp.when.timeIntervalSinceReferenceDate) for \(expected.timeIntervalSinceReferenceDate)")
            if stamp.n < dates.count, Self.sameBits(stamp.when, dates[stamp.n]) { sameAsWritten += 1 }
        }
        // A date more than about 194 days from 2001 has a unit in the last place above 2 ns, more than a
        // timestamp's truncation loses: RealmSwift gave back the Date it wrote, and so does the conversion.
        let coarse = dates.filter { abs($0.timeIntervalSinceReferenceDate) >= 16_777_216 }
        let coarseSame = converted.filter { $0.n < dates.count && abs(dates[$0.n].timeIntervalSinceReferenceDate) >= 16_777_216 && Self.sameBits($0.when, dates[$0.n]) }
        #expect(coarseSame.count == coarse.count, "\(coarseSame.count) of \(coarse.count); \(sameAsWritten) of \(dates.count) in all")
    }
}
