package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"flag"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// runCerts writes the PKI of one sandbox into --dir: a CA, a serving
// certificate for 127.0.0.1, a system:masters client certificate for the
// admin kubeconfig, a service-account signing key, and a serving
// certificate for the Cluster API webhooks. It lives in this binary so the
// sandbox needs no openssl and no Python crypto package.
func runCerts() int {
	fs := flag.NewFlagSet("certs", flag.ExitOnError)
	dir := fs.String("dir", "", "output directory")
	_ = fs.Parse(os.Args[1:])
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "certs: --dir is required")
		return 2
	}
	if err := writePKI(*dir); err != nil {
		fmt.Fprintln(os.Stderr, "certs:", err)
		return 1
	}
	return 0
}

func writePKI(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now().Add(-time.Hour) // tolerate small clock skew
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kapstan-sandbox-ca"},
		NotBefore:             now,
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	if err := writeCert(dir, "ca", caDER, caKey); err != nil {
		return err
	}
	serving := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1")},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	admin := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kapstan-admin", Organization: []string{"system:masters"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	for i, leaf := range []struct {
		name string
		tmpl *x509.Certificate
	}{{"serving", serving}, {"admin", admin}} {
		leaf.tmpl.SerialNumber = big.NewInt(int64(i + 2))
		leaf.tmpl.NotBefore = now
		leaf.tmpl.NotAfter = now.Add(10 * 365 * 24 * time.Hour)
		leaf.tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		der, err := x509.CreateCertificate(rand.Reader, leaf.tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return err
		}
		if err := writeCert(dir, leaf.name, der, key); err != nil {
			return err
		}
	}
	// Service-account tokens are signed with RSA: the API server's
	// --service-account-signing-key-file expects an RSA or ECDSA key, and
	// RSA is what every client library verifies.
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return err
	}
	if err := writePEM(filepath.Join(dir, "sa.pub"), "PUBLIC KEY", pub); err != nil {
		return err
	}
	return writePEM(filepath.Join(dir, "sa.key"), "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(saKey))
}

func writeCert(dir, name string, der []byte, key *ecdsa.PrivateKey) error {
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := writePEM(filepath.Join(dir, name+".crt"), "CERTIFICATE", der); err != nil {
		return err
	}
	return writePEM(filepath.Join(dir, name+".key"), "EC PRIVATE KEY", keyDER)
}

func writePEM(path, kind string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600)
}
