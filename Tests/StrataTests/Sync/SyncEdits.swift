import Foundation
import TestSupport

@testable import Strata

/// Random edits of the sync tests' object graph (`SyncItem`): creates, sets, links, deletes, increments, list,
/// set and map changes, embedded objects and lists of them, `AnyRealmValue` with nested collections.
enum SyncEdits {
    private static let ids = (0..<6).map { "o\($0)" }
    private static let words = ["ant", "bee", "cat", "dog", "eel", "fox"]

    /// One write of one to three random edits; returns what it added to the counter.
    static func random(_ realm: Realm, rng: inout SplitMix64) throws -> Int64 {
        var added: Int64 = 0
        try realm.write {
            for _ in 0..<Int.random(in: 1...3, using: &rng) {
                let id = ids.randomElement(using: &rng)!
                let obj = realm.object(ofType: SyncItem.self, forPrimaryKey: id)
                let all = Array(realm.objects(SyncItem.self))
                let word = words.randomElement(using: &rng)!
                switch Int.random(in: 0..<16, using: &rng) {
                case 0, 1:
                    if obj == nil {
                        let o = SyncItem(id, title: word)
                        if Bool.random(using: &rng) {
                            o.address = SyncAddress()
                            o.address?.city = word
                        }
                        o.tags.append(word)
                        realm.add(o)
                    }
                case 2: obj?.title = word
                case 3: obj?.owner = Bool.random(using: &rng) ? all.randomElement(using: &rng) : nil
                case 4: if let obj { realm.delete(obj) }
                case 5: obj?.increment("count", by: Int.random(in: -3...9, using: &rng))
                case 6:
                    let n = Int.random(in: 1...5, using: &rng)
                    // A client that has not downloaded the counter yet (one that joined late) adds nothing.
                    if let counter = realm.object(ofType: SyncItem.self, forPrimaryKey: "counter") {
                        counter.increment("count", by: n)
                        added += Int64(n)
                    }
                case 7:
                    guard let obj else { break }
                    obj.tags.insert(word, at: Int.random(in: 0...obj.tags.count, using: &rng))
                case 8:
                    guard let obj, !obj.tags.isEmpty else { break }
                    let i = Int.random(in: 0..<obj.tags.count, using: &rng)
                    switch Int.random(in: 0..<3, using: &rng) {
                    case 0: obj.tags.remove(at: i)
                    case 1: obj.tags.move(from: i, to: Int.random(in: 0..<obj.tags.count, using: &rng))
                    default: obj.tags[i] = word
                    }
                case 9:
                    guard let obj else { break }
                    if Bool.random(using: &rng), let other = all.randomElement(using: &rng) {
                        obj.related.append(other)
                    } else if !obj.related.isEmpty {
                        obj.related.remove(at: Int.random(in: 0..<obj.related.count, using: &rng))
                    }
                case 10:
                    if Bool.random(using: &rng) { obj?.labels.insert(word) } else { obj?.labels.remove(word) }
                case 11:
                    if Bool.random(using: &rng) { obj?.attributes[word] = Int.random(in: 0..<100, using: &rng) } else { obj?.attributes.removeObject(for: word) }
                case 12:
                    guard let obj else { break }
                    switch Int.random(in: 0..<3, using: &rng) {
                    case 0:
                        let a = SyncAddress()
                        a.city = word
                        obj.address = a
                    case 1: obj.address?.zip = Int.random(in: 0..<1000, using: &rng)
                    default: obj.address = nil
                    }
                case 13:
                    let choices: [AnyRealmValue] = [
                        .none, .int(Int.random(in: 0..<9, using: &rng)), .string(word),
                        .fromArray([.string(word), .int(Int.random(in: 0..<9, using: &rng))]), .fromDictionary([word: .bool(true)]),
                    ]
                    obj?.extra = choices.randomElement(using: &rng)!
                case 14:
                    guard let obj else { break }
                    switch Int.random(in: 0..<3, using: &rng) {
                    case 0:
                        let a = SyncAddress()
                        a.city = word
                        obj.places.insert(a, at: Int.random(in: 0...obj.places.count, using: &rng))
                    case 1: if !obj.places.isEmpty { obj.places.remove(at: Int.random(in: 0..<obj.places.count, using: &rng)) }
                    default: obj.places.first?.zip = Int.random(in: 0..<1000, using: &rng)
                    }
                default:
                    obj?.count = Int.random(in: 0..<50, using: &rng)
                }
            }
        }
        return added
    }
}
