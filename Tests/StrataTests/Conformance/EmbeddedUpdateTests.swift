import Foundation
import Strata
import Testing
import TestSupport

@Suite struct EmbeddedUpdateTests {
    @Test func O031_modifiedEditsTheEmbeddedChildInPlaceAndAllReplacesIt() throws {
        let dir = try TemporaryDirectory()
        let realm = try ObjectBugTests.realm(dir)
        let parent = try realm.write { realm.create(OBParent.self, value: ["id": 1, "child": ["value": 1]]) }
        let child = try #require(parent.child)
        try realm.write { realm.create(OBParent.self, value: ["id": 1, "child": ["value": 2]], update: .modified) }
        #expect(!child.isInvalidated)
        #expect(child.value == 2)
        try realm.write { realm.add(OBParent(value: ["id": 1, "child": ["value": 3]]), update: .modified) }
        #expect(child.value == 3)
        try realm.write { realm.create(OBParent.self, value: ["id": 1, "child": ["value": 4]], update: .all) }
        #expect(child.isInvalidated)
        #expect(parent.child?.value == 4)
        #expect(realm.objects(OBParent.self).count == 1)
    }

    @Test func O031_modifiedEditsAListsEmbeddedObjectsInPlaceByPosition() throws {
        let dir = try TemporaryDirectory()
        let realm = try ObjectBugTests.realm(dir)
        let parent = try realm.write {
            realm.create(OBParent.self, value: ["id": 1, "children": [["value": 1], ["value": 2], ["value": 3]]])
        }
        let (first, second, third) = (parent.children[0], parent.children[1], parent.children[2])
        // Two elements for three: the first two are edited in place, the third is removed.
        try realm.write { realm.create(OBParent.self, value: ["id": 1, "children": [["value": 10], ["value": 20]]], update: .modified) }
        #expect(!first.isInvalidated && !second.isInvalidated && third.isInvalidated)
        #expect(first.value == 10 && second.value == 20)
        #expect(parent.children.map(\.value) == [10, 20])
        // Three for two: edited in place, then one added.
        try realm.write { realm.add(OBParent(value: ["id": 1, "children": [["value": 11], ["value": 21], ["value": 31]]]), update: .modified) }
        #expect(first.value == 11 && second.value == 21)
        #expect(parent.children.map(\.value) == [11, 21, 31])
        // `.all` replaces them.
        try realm.write { realm.create(OBParent.self, value: ["id": 1, "children": [["value": 5]]], update: .all) }
        #expect(first.isInvalidated && second.isInvalidated)
        #expect(parent.children.map(\.value) == [5])
    }
}
