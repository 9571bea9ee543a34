package htb

// Validate is a placeholder until the validation lands (helper).
func (c Config) Validate() error { return nil }
