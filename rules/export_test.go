package rules

// StoreClass is storeClass, for tests.
var StoreClass = storeClass
