package cdp

import (
	"bufio"
	"io"
	"sync"
)

// Pipe is the transport of Chromium's --remote-debugging-pipe: messages
// separated by NUL, read from r (Chromium's fd 4) and written to w (its
// fd 3). Unlike a DevTools port it needs no network, so it works unchanged
// across namespaces. Close closes w, which ends the browser's side.
func Pipe(r io.Reader, w io.WriteCloser) Transport {
	return &pipe{r: bufio.NewReader(r), w: w}
}

type pipe struct {
	r  *bufio.Reader
	mu sync.Mutex // one message at a time on w
	w  io.WriteCloser
}

func (p *pipe) ReadMessage() ([]byte, error) {
	b, err := p.r.ReadBytes(0)
	if err != nil {
		return nil, err
	}
	return b[:len(b)-1], nil
}

func (p *pipe) WriteMessage(msg []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, err := p.w.Write(append(msg, 0))
	return err
}

func (p *pipe) Close() error { return p.w.Close() }
