package rules

// StoreClass is storeClass, for tests.
var StoreClass = storeClass

// String names a tier in test messages.
func (t Tier) String() string {
	return [...]string{"vendor", "code host", "unknown", "untrusted"}[t]
}
