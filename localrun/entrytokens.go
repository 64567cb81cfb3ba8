package localrun

import (
	"fmt"
	"log/slog"

	"github.com/waitroom/waitroom/entrytoken"
)

// entryTokenKeys generates a signing key when ENTRY_TOKEN_KEYS is unset, so
// that the runner issues the same JWT entry tokens as a deployment and
// publishes them at /.well-known/jwks.json.
func entryTokenKeys(k entrytoken.Keys, log *slog.Logger) (entrytoken.Keys, error) {
	if k.Enabled() {
		return k, nil
	}
	seed, err := entrytoken.GenerateSeed()
	if err != nil {
		return k, fmt.Errorf("entry token key: %w", err)
	}
	log.Info("ENTRY_TOKEN_KEYS unset: generated an entry-token key for this process; tokens will not verify after a restart")
	return entrytoken.ParseKeys(seed, k.Issuer)
}
