package main

import (
	"fmt"
	"sync"
)

func work(n int, ready *sync.WaitGroup, start chan struct{}, out []int) {
	ready.Done()
	<-start
	value := n * 10 // all three here
	out[n] = value
}

func main() {
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	out := make([]int, 3)
	ready.Add(3)
	done.Add(3)
	for i := 0; i < 3; i++ {
		go func(n int) { defer done.Done(); work(n, &ready, start, out) }(i)
	}
	ready.Wait()
	close(start)
	done.Wait()
	fmt.Println("results", out)
}
