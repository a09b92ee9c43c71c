package dashboard

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

const (
	// tokenTTL is how long a page's action token holds: the actions part
	// of the page is not refreshed, so an operator who leaves it open
	// longer reloads it (the 403 says so).
	tokenTTL = 2 * time.Hour
	// tokenMax bounds the token read from a request: a decimal time, a
	// dot and a base64 SHA-256.
	tokenMax = 64
	// keyMin is the shortest HMAC key accepted: SHA-256's block of
	// security, 32 bytes.
	keyMin = 32
	// tokenDomain separates these MACs from any other the host computes
	// under the same key.
	tokenDomain = "worksteal dashboard action v1\x00"
)

var (
	errNoToken  = errors.New("dashboard: no action token")
	errBadToken = errors.New("dashboard: the action token is invalid or expired (reload the page)")
)

// mintToken returns a token for actor valid until now+tokenTTL: the
// expiry and an HMAC of it and the actor. It needs no server state, so
// any replica sharing the key verifies it.
func mintToken(key []byte, actor string, now time.Time) string {
	exp := strconv.FormatInt(now.Add(tokenTTL).Unix(), 10)
	return exp + "." + base64.RawURLEncoding.EncodeToString(tokenMAC(key, exp, actor))
}

func tokenMAC(key []byte, exp, actor string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(tokenDomain))
	m.Write([]byte(exp))
	m.Write([]byte{0})
	m.Write([]byte(actor))
	return m.Sum(nil)
}

// checkToken verifies a token minted for actor that has not expired; the
// MAC is compared in constant time. A token of another actor, as one
// read off another operator's page, fails.
func checkToken(key []byte, actor, token string, now time.Time) error {
	if token == "" {
		return errNoToken
	}
	if len(token) > tokenMax {
		return errBadToken
	}
	exp, mac, ok := strings.Cut(token, ".")
	if !ok {
		return errBadToken
	}
	unix, err := strconv.ParseInt(exp, 10, 64)
	if err != nil || strconv.FormatInt(unix, 10) != exp {
		return errBadToken
	}
	got, err := base64.RawURLEncoding.DecodeString(mac)
	if err != nil || !hmac.Equal(got, tokenMAC(key, exp, actor)) {
		return errBadToken
	}
	// Checked after the MAC so that timing says nothing of a forged expiry.
	if expiry := time.Unix(unix, 0); !now.Before(expiry) || expiry.After(now.Add(tokenTTL+time.Minute)) {
		return errBadToken
	}
	return nil
}

// crossOrigin refuses a browser's cross-origin POST (Sec-Fetch-Site, or
// Origin against Host); requests without either header, from scripts,
// pass it and still need the token.
var crossOrigin = http.NewCrossOriginProtection()
