package zktest

import (
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batonhq/baton/internal/testenv"
)

// Option configures Start.
type Option func(*config)

type config struct {
	superPassword string
	tls           *TLS
}

// SuperUser is the name of ZooKeeper's super user, the identity that
// WithSuperDigest lets through every ACL.
const SuperUser = "super"

// WithSuperDigest makes the digest identity "super:password" the server's
// administrator: a session that authenticated with it
// (addauth digest super:password) passes every ACL check.
func WithSuperDigest(password string) Option {
	return func(c *config) { c.superPassword = password }
}

// TLS is the secure client port's configuration: PEM files.
type TLS struct {
	Cert string // the server's certificate (chain)
	Key  string // its private key (PKCS#8 PEM)
	// CA is the CA file client certificates are checked against. ZooKeeper
	// needs a trust store even when it asks for no client certificate.
	CA string
	// ClientAuth is "none", "want" or "need" (ZooKeeper's ssl.clientAuth);
	// "" means "need", ZooKeeper's default.
	ClientAuth string
}

// WithTLS opens a secure client port (TLS) beside the plain one, served by
// netty, which the secure port requires (see SecureAddr).
func WithTLS(cfg TLS) Option {
	return func(c *config) { c.tls = &cfg }
}

// Digest is ZooKeeper's stored form of a digest identity:
// "user:" + base64(sha1("user:password")), as in a digest ACL's id and in
// the superDigest property.
func Digest(user, password string) string {
	h := sha1.Sum([]byte(user + ":" + password))
	return user + ":" + base64.StdEncoding.EncodeToString(h[:])
}

// jvmFlags are the system properties of the options.
func (c config) jvmFlags() []string {
	var f []string
	if c.superPassword != "" {
		f = append(f, "-Dzookeeper.DigestAuthenticationProvider.superDigest="+Digest(SuperUser, c.superPassword))
	}
	if t := c.tls; t != nil {
		auth := t.ClientAuth
		if auth == "" {
			auth = "need"
		}
		f = append(f,
			"-Dzookeeper.serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory",
			"-Dzookeeper.ssl.keyStore.location="+t.pemKeyStore(),
			"-Dzookeeper.ssl.keyStore.type=PEM",
			"-Dzookeeper.ssl.trustStore.location="+t.CA,
			"-Dzookeeper.ssl.trustStore.type=PEM",
			"-Dzookeeper.ssl.clientAuth="+auth,
		)
	}
	return f
}

// pemKeyStore is the key store file ZooKeeper reads: its PEM key store
// holds the key and the certificate chain in one file, written next to
// the key by startOnce (see writeKeyStore).
func (t *TLS) pemKeyStore() string { return t.Key + ".keystore.pem" }

// writeKeyStore concatenates the key and the certificate into the key
// store file ZooKeeper's PEM reader expects.
func (t *TLS) writeKeyStore() error {
	key, err := os.ReadFile(t.Key)
	if err != nil {
		return fmt.Errorf("TLS key: %w", err)
	}
	cert, err := os.ReadFile(t.Cert)
	if err != nil {
		return fmt.Errorf("TLS certificate: %w", err)
	}
	return os.WriteFile(t.pemKeyStore(), append(append(key, '\n'), cert...), 0o600)
}

// nettyJars are the jars the netty connection factory needs beyond those
// zookeeper.jar's manifest names (Debian's libnetty-java).
var nettyJars = []string{"netty-codec.jar", "netty-resolver.jar", "netty-transport-native-unix-common.jar"}

// NettyClasspath is Classpath plus the netty jars the secure client port
// needs.
func NettyClasspath() string {
	cp := []string{Classpath()}
	for _, j := range nettyJars {
		cp = append(cp, filepath.Join(JavaDir, j))
	}
	return strings.Join(cp, ":")
}

// RequireNetty skips t (fails it with CI set) when the netty jars are
// missing.
func RequireNetty(t testing.TB) {
	t.Helper()
	for _, j := range nettyJars {
		_, err := os.Stat(filepath.Join(JavaDir, j))
		testenv.Require(t, "zktest: netty (apt-get install libnetty-java)", err)
	}
}
